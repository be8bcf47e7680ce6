"""What ``streamdelay serve`` shows to whom, and how long a dashboard session lasts
(docs/security.md#what-serve-shows-to-anyone, docs/security.md#dashboard-sessions)."""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid

from tests.redis_server import RedisServer
from tests.web_server import WebServer

SECRET = {"STREAMDELAY_SESSION_SECRET": "a-session-secret-kept-across-restarts"}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _get(opener: urllib.request.OpenerDirector, url: str, **headers: str
         ) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def _login(server: WebServer, name: str) -> str:
    """Log in on the dashboard with the token ``name``; the session cookie's value."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    page = _get(opener, server.url + "/login")[2]
    fields = dict(re.findall(r'name="(_csrf_token|csrf_token)" value="([^"]+)"', page))
    data = urllib.parse.urlencode({"token": server.token(name), **fields}).encode()
    request = urllib.request.Request(server.url + "/login", data=data, method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with opener.open(request, timeout=10) as answer:
            cookies = answer.headers.get_all("set-cookie") or []
    except urllib.error.HTTPError as exc:
        cookies = exc.headers.get_all("set-cookie") or []
    found = re.search(r"((?:__Host-)?streamdelay_session)=([^;]+)", "\n".join(cookies))
    assert found is not None, cookies
    return f"{found.group(1)}={found.group(2)}"


def _dashboard(server: WebServer, cookie: str) -> int:
    opener = urllib.request.build_opener(_NoRedirect)
    return _get(opener, server.url + "/", Accept="text/html", Cookie=cookie)[0]


def test_healthz_names_the_queues_only_to_readers(web_server: WebServer) -> None:
    status, body = web_server.request("GET", "/healthz", token=None)
    assert status == 200 and body == {"status": "ok"}
    assert not any(name in json.dumps(body) for name in web_server.queues)
    status, body = web_server.request("GET", "/healthz", token="consumer")  # no read scope
    assert status == 200 and body == {"status": "ok"}
    status, body = web_server.request("GET", "/healthz", token="reader")
    assert status == 200 and body["queues"] == {name: True for name in web_server.queues}


def test_a_caller_without_token_cannot_tell_a_served_queue(web_server: WebServer) -> None:
    for path in (f"/v1/queues/{web_server.queues[0]}/stats", "/v1/queues/nosuch/stats"):
        status, body = web_server.request("GET", path, token=None)
        assert status == 401 and body["error"]["code"] == "unauthorized", (path, body)
    served = web_server.request("POST", f"/v1/queues/{web_server.queues[0]}/topics/t:reserve",
                                {}, token=None)
    other = web_server.request("POST", "/v1/queues/nosuch/topics/t:reserve", {}, token=None)
    assert served == other and served[0] == 401


def test_a_session_ends_when_its_token_is_rotated(shared_redis: RedisServer) -> None:
    queue = f"rot{uuid.uuid4().hex[:8]}"
    old = {"ops": ("ops-token-" + "e5" * 10, "read")}
    new = {"ops": ("ops-token-" + "f6" * 10, "read")}  # the same name, a new token
    with WebServer(shared_redis.url, [queue], tokens=old, env=SECRET) as before:
        cookie = _login(before, "ops")
        assert _dashboard(before, cookie) == 200
        with WebServer(shared_redis.url, [queue], tokens=new, env=SECRET) as after:
            assert _dashboard(after, cookie) == 303  # to /login: the token it was made with
            assert _dashboard(after, _login(after, "ops")) == 200  # is gone; a new login works
        with WebServer(shared_redis.url, [queue], tokens=old, env=SECRET) as restarted:
            assert _dashboard(restarted, cookie) == 200  # the same token: the session holds
