"""``create_app(settings)``: the Litestar application of ``streamdelay serve``.

Layout (docs/design.md#web): the JSON API under ``/v1`` (``web.api``), the dashboard at ``/``
(``web.dashboard``), files of ``web/static`` under ``/static``, ``/healthz``, ``/metrics`` and
``/openapi.json``. ``app.state`` holds ``settings``, ``service`` (``web.service.Service``),
``queues`` (name -> ``AsyncQueue``), ``tokens``, ``signer`` and ``metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar, MediaType, Request, Response, Router, get
from litestar.config.csrf import CSRFConfig
from litestar.contrib.jinja import JinjaTemplateEngine
from litestar.exceptions import NotFoundException
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from .. import __version__
from ..protocol.plan import Command
from ..redis_io.runner import run_step_async
from .api import api_routes
from .api.bodies import document
from .api.paths import ActionPaths, public_schema
from .auth import AuthMiddleware, SessionSigner, needs
from .dashboard import TEMPLATE_DIR, dashboard_routes
from .errors import EXCEPTION_HANDLERS
from .fastpath import FastPaths
from .limits import LimitedRequest
from .local import LocalOnly
from .metrics import HttpMetrics, MetricsMiddleware
from .service import Service
from .settings import SESSION_MAX_AGE, ServeSettings

STATIC_DIR = Path(__file__).parent / "static"
HEALTH_TIMEOUT = 2.0
CSRF_EXEMPT = ["^/v1/", "^/healthz$", "^/metrics$"]  # bearer-token routes (auth.py)


class Health(msgspec.Struct):
    """``/healthz``: ``ok`` when every served queue's Redis answered PING in time."""

    status: str
    queues: dict[str, bool]


PING = Command(("PING",))


@get("/healthz", tags=["service"], security=[])
async def healthz(request: Request[Any, Any, Any]) -> Response[Health]:
    """200 when Redis answers for every served queue, else 503."""
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
    return Response(Health("ok" if healthy else "unavailable", found),
                    status_code=200 if healthy else 503)


@get("/metrics", include_in_schema=False, opt=needs("read"))
async def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Prometheus text: queue gauges, promotions, HTTP request metrics."""
    registry: HttpMetrics = request.app.state.metrics
    return Response(await registry.render(), media_type=registry.content_type)


@get("/openapi.json", include_in_schema=False, media_type=MediaType.JSON)
async def openapi_document(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API."""
    schema = public_schema(request.app.openapi_schema.to_schema(),
                           list(request.app.state.settings.queues))
    document(schema)
    return schema


async def _hidden(connection: Any, _: Any) -> None:
    """A guard that answers 404."""
    raise NotFoundException()


def _openapi() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="streamdelay", version=__version__,
        description="Delayed jobs on Redis Streams over HTTP: producers, operators and "
                    "consumers in any language (docs/http.md).",
        render_plugins=[JsonRenderPlugin()],
        # Litestar's own copy shows the internal action paths: hidden (404); /openapi.json
        # serves the public document
        openapi_router=Router(path="/schema", route_handlers=[], guards=[_hidden],
                              include_in_schema=False),
        components=Components(security_schemes={"bearer": SecurityScheme(
            type="http", scheme="bearer", description="A token of --token-file or "
            "STREAMDELAY_TOKENS (name:token:scopes)")}),
        security=[{"bearer": []}], use_handler_docstrings=True)


def create_app(settings: ServeSettings) -> Litestar:
    """The ASGI application serving ``settings.queues`` (docs/http.md)."""
    service = Service(settings)
    signer = SessionSigner(settings.session_secret, SESSION_MAX_AGE)
    registry = HttpMetrics([q.config for q in service.queues.values()], service.promoted)
    service.on_reclaimed = lambda queue, topic, group, count: registry.settled(
        queue, topic, group, "reclaimed", count)
    registry.on_settled = service.observe_outcome  # the dashboard's throughput

    @contextlib.asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await registry.start()
        await service.start()
        try:
            yield
        finally:
            await service.stop()
            registry.close()

    csrf_secret = hashlib.sha256(b"streamdelay-csrf\0" + settings.session_secret).hexdigest()
    app = Litestar(
        route_handlers=[healthz, metrics, openapi_document, *api_routes(),
                        *dashboard_routes(),
                        create_static_files_router("/static", directories=[STATIC_DIR],
                                                   include_in_schema=False)],
        lifespan=[lifespan],
        middleware=[DefineMiddleware(AuthMiddleware, tokens=settings.tokens, signer=signer)],
        csrf_config=CSRFConfig(secret=csrf_secret, cookie_samesite="strict",
                               cookie_secure=settings.secure_cookies, exclude=CSRF_EXEMPT),
        template_config=TemplateConfig(directory=TEMPLATE_DIR, engine=JinjaTemplateEngine),
        openapi_config=_openapi(),
        exception_handlers=EXCEPTION_HANDLERS,
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
    if not settings.tokens.configured:  # loopback only: refuse what a browser was tricked into
        handler = LocalOnly(handler)
    app.asgi_handler = MetricsMiddleware(handler, registry)
    return app
