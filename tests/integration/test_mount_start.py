"""``streamdelay.web.asgi`` mounted in a Starlette app that runs no lifespan of it
(docs/integrations.md#mounting-the-service): the first requests, however many at once and
even one whose client goes away, start the service exactly once; its lifespan stops it."""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.routing import Mount

import streamdelay.web


def _duties() -> int:
    """The service's supervised duties running now (a dispatcher per queue, the reclaim)."""
    return sum(1 for task in asyncio.all_tasks()
               if getattr(task.get_coro(), "__qualname__", "") == "Service._supervised")


def test_first_requests_start_the_mounted_service_once(redis_url: str,
                                                        queue_name: str) -> None:
    service = streamdelay.web.asgi(queues=[queue_name], url=redis_url)
    host = Starlette(routes=[Mount("/ops/sd", app=service)])

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=host, client=("127.0.0.1", 5000))
        try:
            await requests(transport)
        finally:
            await service.stop()  # stopped however the checks went: no task left running

    async def requests(transport: httpx.ASGITransport) -> None:
        # a loopback client and host name: a service without tokens answers no other
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            gone = asyncio.ensure_future(client.get("/ops/sd/healthz"))
            await asyncio.sleep(0)
            gone.cancel()  # its client went away while the service started
            replies = await asyncio.gather(*(client.get("/ops/sd/healthz") for _ in range(20)))
            assert {r.status_code for r in replies} == {200}
            assert _duties() == 2
            page = await client.get(f"/ops/sd/q/{queue_name}")
            assert page.status_code == 200 and f'href="/ops/sd/q/{queue_name}' in page.text
        async with service.lifespan():  # entered after a first-use start: stops it on exit
            assert _duties() == 2
        await asyncio.sleep(0)
        assert _duties() == 0

    asyncio.run(scenario())
