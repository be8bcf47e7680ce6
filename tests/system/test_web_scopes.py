"""Every route with every token that lacks the route's scope answers 403 (docs/security.md#scopes).

The routes are found in the application itself (every handler that declares a scope with
``auth.needs``, and every dashboard action), so a route added later is in the table without
editing this file. For each route the test sends one request per token lacking its scope: a
token of each other single scope (a read-only token on the consume routes included) and a
token of all the other scopes together. Each must answer 403 ``forbidden`` and change nothing;
the token that holds exactly the scope must get past the check (anything but 401/403), so the
table cannot pass by reaching no route at all.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
import redis

import streamdelay as sd
from streamdelay.client.pause_plans import paused_key
from streamdelay.web.api.paths import public_path
from streamdelay.web.app import create_app
from streamdelay.web.auth import SCOPE_OPT
from streamdelay.web.dashboard.actions import ACTIONS
from streamdelay.web.serve_settings import ServeSettings
from streamdelay.web.tokens import SCOPES
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(120)

# one token per single scope, and one per "every scope but this one"
SCOPE_TOKENS = {
    **{f"only-{s}": (f"only-{s}-" + "x" * 20, s) for s in SCOPES},
    **{f"not-{s}": (f"not-{s}-" + "y" * 20, ",".join(o for o in SCOPES if o != s))
       for s in SCOPES},
}
PARAMS = {"topic": "t", "receipt": "bm90LWEtcmVjZWlwdA", "id": "j1", "name": "w1"}


def scoped_routes(queue: str) -> list[tuple[str, str, str]]:
    """(method, public path, scope) of every route of the app that declares a scope."""
    app = create_app(ServeSettings(url="redis://127.0.0.1:1/0", queues=(queue,)))
    found: list[tuple[str, str, str]] = []
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            scope = handler.opt.get(SCOPE_OPT)
            if scope is None:
                continue
            path = re.sub(r"\{(\w+)(?::\w+)?\}",
                          lambda m: queue if m.group(1) == "queue" else PARAMS[m.group(1)],
                          public_path(route.path))
            if path.endswith("/events"):  # an SSE follow never ends: the answer that does
                path += "?follow=false"
            found.extend((method, path, scope) for method in sorted(handler.http_methods))
    return found


def lacking(scope: str) -> list[str]:
    """The names of the tokens without ``scope``."""
    return [name for name, (_, scopes) in SCOPE_TOKENS.items() if scope not in scopes.split(",")]


@pytest.fixture(scope="module")
def server(shared_redis: RedisServer) -> Iterator[WebServer]:
    """``streamdelay serve`` with the tokens above, on one fresh queue."""
    with WebServer(shared_redis.url, [f"sc{uuid.uuid4().hex[:8]}"],
                   tokens=SCOPE_TOKENS) as running:
        yield running


def test_the_table_covers_every_scope_and_the_consume_routes() -> None:
    routes = scoped_routes("q")
    assert {scope for _, _, scope in routes} == set(SCOPES)
    consume = {path for _, path, scope in routes if scope == "consume"}
    assert {"/v1/queues/q/topics/t:reserve", "/v1/queues/q/deliveries/bm90LWEtcmVjZWlwdA:ack",
            "/v1/queues/q/deliveries/bm90LWEtcmVjZWlwdA:fail",
            "/v1/queues/q/deliveries/bm90LWEtcmVjZWlwdA:touch"} <= consume
    assert "only-read" in lacking("consume") and "not-consume" in lacking("consume")
    assert len(routes) >= 15


def test_every_route_refuses_every_token_without_its_scope(server: WebServer) -> None:
    queue = sd.Queue(server.queues[0], url=server.redis_url)
    queue.enqueue("t", {"n": 1}, id="j1", delay=3600)
    routes = scoped_routes(queue.name)
    wrong: list[str] = []
    for method, path, scope in routes:
        for name in lacking(scope):
            status, answer = server.request(method, path, token=name)
            code = answer.get("error", {}).get("code") if isinstance(answer, dict) else None
            if (status, code) != (403, "forbidden"):
                wrong.append(f"{method} {path} with {name} ({scope} needed): {status} {answer}")
    assert not wrong, "\n".join(wrong)
    info = queue.get("j1")  # nothing changed: not cancelled, rescheduled nor reserved
    assert info is not None and (info.state, info.attempts) == ("delayed", 0)
    client = redis.Redis.from_url(server.redis_url)
    assert not client.hexists(paused_key(queue.name), "t")
    client.close()
    for method, path, scope in routes:  # the token with the scope gets past the check
        status, answer = server.request(method, path, token=f"only-{scope}")
        assert status not in (401, 403), f"{method} {path} with only-{scope}: {answer}"
    queue.cancel("j1")
    queue.close()


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_dashboard_action_refuses_every_token_without_its_scope(server: WebServer,
                                                                     name: str) -> None:
    scope = ACTIONS[name].scope
    target = ("id=j1" if ACTIONS[name].on_job else "name=w-1" if ACTIONS[name].on_worker
              else "topic=t")
    path = f"/q/{server.queues[0]}/confirm?action={name}&{target}"
    for token in lacking(scope):
        if "read" not in SCOPE_TOKENS[token][1].split(","):
            continue  # a dashboard page needs read first: without it, the login page
        status, _ = server.request("GET", path, token=token, headers={"Accept": "text/html"})
        assert status == 403, (name, token)
    status, _ = server.request("GET", path, token="not-" + next(
        s for s in SCOPES if s not in (scope, "read")), headers={"Accept": "text/html"})
    assert status == 200
