"""``create_app(settings)``: the Litestar application of ``streamdelay serve``.

Layout (docs/design.md#web): the JSON API under ``/v1`` (``web.api``), the dashboard at ``/``
(``web.dashboard``), files of ``web/static`` under ``/static``, ``/healthz``, ``/metrics`` and
``/openapi.json``. ``app.state`` holds ``settings``, ``service`` (``web.service.Service``),
``queues`` (name -> ``AsyncQueue``), ``tokens``, ``signer`` and ``metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import msgspec
from litestar import Litestar, MediaType, Request, Response, Router, get
from litestar.exceptions import NotFoundException
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from .. import __version__
from ..io.steps import run_step_async
from ..protocol.plan import Command
from .api import api_routes
from .api.openapi import finish
from .api.paths import ActionPaths
from .auth import SESSION_COOKIE, AuthMiddleware, SessionSigner, host_prefixed, needs, principal_of
from .body_depth import LimitedRequest
from .csrf import SessionCsrf
from .dashboard import TEMPLATE_DIR, dashboard_routes
from .fastpath import FastPaths
from .http_errors import EXCEPTION_HANDLERS
from .local import LocalOnly
from .metrics import HttpMetrics, MetricsMiddleware
from .polls import PollGate
from .queries import check_whole_numbers
from .serve_settings import SESSION_MAX_AGE, ServeSettings
from .service import Service

STATIC_DIR = Path(__file__).parent / "static"
HEALTH_TIMEOUT = 2.0
CSRF_EXEMPT = ["^/v1/", "^/healthz$", "^/metrics$"]  # bearer-token routes (auth.py)


class Health(msgspec.Struct, omit_defaults=True):
    """``/healthz``: ``ok`` when every served queue's Redis answered PING in time; the queues
    by name only to a caller allowed to read (docs/security.md#what-serve-shows-to-anyone)."""

    status: Literal["ok", "unavailable"]
    queues: dict[str, bool] | None = None


PING = Command(("PING",))


@get("/healthz", tags=["service"], security=[], responses={503: ResponseSpec(
    data_container=Health, generate_examples=False,
    description="Redis did not answer in time for a served queue: `status` is `unavailable`")})
async def healthz(request: Request[Any, Any, Any]) -> Response[Health]:
    """200 when Redis answers for every served queue, else 503. Open to anyone (a load
    balancer's check); the queues it names only with a token (or session) that may read."""
    queues = request.app.state.queues

    async def ping(queue: Any) -> bool:
        try:
            return bool(await asyncio.wait_for(run_step_async(queue.client, PING),
                                               HEALTH_TIMEOUT))
        except Exception:
            return False

    results = await asyncio.gather(*(ping(queue) for queue in queues.values()))
    found = dict(zip(queues, results, strict=True))
    healthy = all(found.values())
    principal = principal_of(request)
    shown = found if principal is not None and principal.allows("read") else None
    return Response(Health("ok" if healthy else "unavailable", shown),
                    status_code=200 if healthy else 503)


@get("/metrics", include_in_schema=False, opt=needs("read"))
async def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Prometheus text: queue gauges, promotions, HTTP request metrics."""
    registry: HttpMetrics = request.app.state.metrics
    return Response(await registry.render(), media_type=registry.content_type)


@get("/openapi.json", include_in_schema=False, media_type=MediaType.JSON)
async def openapi_document(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API."""
    return finish(request.app.openapi_schema.to_schema(), request.app)


async def _hidden(connection: Any, _: Any) -> None:
    """A guard that answers 404."""
    raise NotFoundException()


def _openapi() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="streamdelay", version=__version__,
        description="Delayed jobs on Redis Streams over HTTP: producers, operators and "
                    "consumers in any language.",
        render_plugins=[JsonRenderPlugin()],
        # Litestar's own copy shows the internal action paths: hidden (404); /openapi.json
        # serves the public document
        openapi_router=Router(path="/schema", route_handlers=[], guards=[_hidden],
                              include_in_schema=False),
        components=Components(security_schemes={"bearer": SecurityScheme(
            type="http", scheme="bearer", description="A token of `--token-file` or "
            "`STREAMDELAY_TOKENS` (`name:token:scopes`). Each operation's security "
            "requirement names the scope it needs: `read`, `write`, `consume` or `admin`.")}),
        security=[{"bearer": []}], use_handler_docstrings=True)


def create_app(settings: ServeSettings) -> Litestar:
    """The ASGI application serving ``settings.queues`` (docs/http.md)."""
    service = Service(settings)
    signer = SessionSigner(settings.session_secret, SESSION_MAX_AGE, settings.tokens,
                           cookie=host_prefixed(SESSION_COOKIE, settings.secure_cookies))
    registry = HttpMetrics([q.config for q in service.queues.values()], service.promoted)
    service.on_reclaimed = lambda queue, topic, group, count: registry.settled(
        queue, topic, group, "reclaimed", count)
    service.on_expired = lambda queue, topic, group, count: registry.settled(
        queue, topic, group, "expired", count)
    # what the served queues' HTTP consumers report (each queue's consumer observer: the
    # dashboard's lateness and throughput are its own, docs/design.md#observer)
    service.report_to(registry.reporter)

    @contextlib.asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await service.start()
        for name, dispatcher in service.dispatchers.items():  # before their first call runs:
            # dead jobs purged by retention, no consumer's group (docs/reliability.md)
            dispatcher.on_purged = lambda topic, n, queue=name: registry.settled(
                queue, topic, "", "purged", n)
        try:
            yield
        finally:
            await service.stop()
            registry.close()

    app = Litestar(
        route_handlers=[healthz, metrics, openapi_document, *api_routes(),
                        *dashboard_routes(),
                        create_static_files_router("/static", directories=[STATIC_DIR],
                                                   include_in_schema=False)],
        lifespan=[lifespan],
        middleware=[DefineMiddleware(AuthMiddleware, tokens=settings.tokens, signer=signer),
                    DefineMiddleware(SessionCsrf, secret=settings.session_secret,
                                     session_cookie=signer.cookie,
                                     secure=settings.secure_cookies, exempt=CSRF_EXEMPT)],
        template_config=TemplateConfig(directory=TEMPLATE_DIR, engine=JinjaTemplateEngine),
        openapi_config=_openapi(),
        exception_handlers=EXCEPTION_HANDLERS,
        before_request=check_whole_numbers,  # 1e3 is no integer (web/queries.py)
        request_class=LimitedRequest,
        request_max_body_size=settings.max_body_bytes,
        debug=False,
        logging_config=None,  # the CLI's handlers (--log-format) stay in charge
        state=None,
    )
    state = app.state
    state.settings = settings
    state.service = service
    state.queues = service.queues
    state.tokens = settings.tokens
    state.signer = signer
    state.metrics = registry
    handler: Any = FastPaths(ActionPaths(app.asgi_handler), settings, service.queues, signer,
                             registry)
    handler = PollGate(handler, settings, service.queues, signer)
    if not settings.tokens.configured:  # loopback only: refuse what a browser was tricked into
        handler = LocalOnly(handler)
    app.asgi_handler = MetricsMiddleware(handler, registry)
    return app
