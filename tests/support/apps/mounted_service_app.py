"""Hosts that mount ``streamdelay.web.asgi(...)`` without running its lifespan
(tests/system/test_integrations_asgi.py): a Starlette app under ``/ops/sd`` (Starlette runs no
mounted app's lifespan: the service starts on its first request) and a Litestar app under
``/tools/sd`` (a Litestar mount strips the prefix itself; its handler names the mount in
``root_path``); and the service served as it is, whose lifespan uvicorn runs. Each serves
queue ``MOUNTED_QUEUE`` of ``STREAMDELAY_URL`` with the tokens of ``STREAMDELAY_TOKENS``,
dispatching."""

from __future__ import annotations

import os
from typing import Any

from litestar import Litestar, asgi, get
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

import streamdelay.web

QUEUE = os.environ["MOUNTED_QUEUE"]


def _service() -> Any:
    return streamdelay.web.asgi(queues=[QUEUE], tokens=os.environ["STREAMDELAY_TOKENS"])


async def _home(request: Any) -> PlainTextResponse:
    return PlainTextResponse("the host app")


# served as it is (uvicorn runs its lifespan: the ASGI lifespan protocol of the wrapper)
direct_app = _service()

starlette_app = Starlette(routes=[Route("/", _home), Mount("/ops/sd", app=_service())])

_litestar_service = _service()


@asgi("/tools/sd", is_mount=True)
async def _mounted(scope: Any, receive: Any, send: Any) -> None:
    # a Litestar mount strips its path but leaves root_path: the service is told where it is
    await _litestar_service({**scope, "root_path": "/tools/sd"}, receive, send)


@get("/")
async def _litestar_home() -> str:
    return "the host app"


litestar_app = Litestar(route_handlers=[_litestar_home, _mounted])
