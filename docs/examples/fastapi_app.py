"""A FastAPI app with streamdelay inside: a worker runs in the app's lifespan, the dashboard and
the HTTP API are mounted under /streamdelay (docs/integrations.md).

Run it with: uvicorn fastapi_app:app
"""

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException

import streamdelay as sd
import streamdelay.web

URL = os.environ.get("STREAMDELAY_URL", "redis://localhost:6379/0")

queue = sd.AsyncQueue("orders", url=URL, keep_result=3600)  # results kept an hour
worker = sd.Worker(queue, concurrency=8)


@worker.handler("order.close")
async def close_order(job: sd.Job) -> dict[str, Any]:
    await asyncio.sleep(job.body.get("work_seconds", 0))  # the real work goes here
    return {"closed": job.body["order_id"]}


# the dashboard and /v1 API of `streamdelay serve`, for the app's operators; the worker above
# promotes due jobs, so this copy need not (dispatch=False)
service = streamdelay.web.asgi(queues=["orders"], url=URL,
                               tokens=os.environ.get("STREAMDELAY_TOKENS"), dispatch=False)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with sd.lifespan(worker), service.lifespan():
        yield  # the app serves; on shutdown running jobs finish, then connections close
    await queue.close()


app = FastAPI(lifespan=lifespan)
app.mount("/streamdelay", service)


@app.post("/orders/{order_id}/close")
async def close(order_id: int, delay: float = 0, work_seconds: float = 0) -> dict[str, Any]:
    reply = await queue.enqueue("order.close", {"order_id": order_id,
                                                "work_seconds": work_seconds}, delay=delay)
    return {"job": reply.id, "due": reply.due}


@app.get("/jobs/{job_id}")
async def job_result(job_id: str, wait: float = 0) -> dict[str, Any]:
    try:
        result = await queue.result(job_id, timeout=wait if wait > 0 else None)
    except sd.ResultTimeout:
        return {"state": "pending"}
    if result is None:
        info = await queue.get(job_id)
        if info is None:
            raise HTTPException(404, "no such job")
        return {"state": info.state}
    return {"state": result.state, "value": result.value, "error": result.error}
