"""The answer of ``:reserve``: every job a reserve took is delivered, dead-lettered with its
reason, or handed back (docs/http.md#consumers).

The jobs are taken (Redis counts them as delivered to the consumer) before the answer exists,
so every step between the take and the last byte of the answer is guarded: a delivery whose
body JSON cannot carry (a MessagePack extension type, a map keyed by arrays) goes dead alone
with that reason, as a worker dead-letters a body it cannot decode; when the answer cannot be
built, or its client hung up before it went out, or sending it failed, whatever is still held
is handed back at once (``AsyncQueue.release``: no attempt spent), never left to its ttr.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.response.base import ASGIResponse
from litestar.types import Receive, Scope, Send

from ...client.queue import AsyncQueue
from ...consume.reservation import AsyncReservation
from .api_models import Delivery

log = logging.getLogger("streamdelay.web")
_encoder = msgspec.json.Encoder()
# What msgspec raises for a value JSON has no form for (and for one nested too deeply)
_UNSENDABLE = (TypeError, ValueError, OverflowError, RecursionError)

GiveBack = Callable[[str], Awaitable[None]]


def _give_back(target: AsyncQueue, held: list[AsyncReservation]) -> GiveBack:
    """A function that hands ``held`` back (once) and logs why."""
    async def give_back(why: str) -> None:
        if not held:
            return
        taken, held[:] = list(held), []
        try:
            # shielded: a cancelled request (a stopping server) still gives the jobs back
            count = await asyncio.shield(target.release(taken))
        except Exception as exc:  # Redis is gone too: the jobs come back after their ttr
            log.warning("reserve: %s; %d job(s) could not be handed back (%s: %s), they "
                        "come back after their ttr", why, len(taken), type(exc).__name__, exc)
            return
        log.info("reserve: %s; %d job(s) handed back, no attempt spent", why, count)
    return give_back


def _unsendable(exc: BaseException) -> str:
    return (f"BodyEncodeError: body: cannot be sent as JSON over HTTP "
            f"({type(exc).__name__}: {exc}); a Python consumer can take it (docs/http.md)")


async def carry(request: Request[Any, Any, Any], queue: str, target: AsyncQueue, group: str,
                found: list[AsyncReservation], gone: asyncio.Future[Any]
                ) -> HandOver | None:
    """The 200 answer carrying ``found``, or None when nothing is left to send (every body
    unsendable, or the client already gone: those jobs are handed back). Anything raised here
    first hands back every job not yet dead-lettered."""
    held = list(found)
    give_back = _give_back(target, held)
    try:
        if gone.done():
            await give_back("the client is gone")
            return None
        parts: list[bytes] = []
        unsendable: list[tuple[AsyncReservation, str]] = []
        for r in found:
            try:
                parts.append(_encoder.encode(Delivery(r.id, r.topic, r.body, r.headers,
                                                      r.attempt, r.due, r.ttr, r.receipt,
                                                      r.last_checkpoint)))
            except _UNSENDABLE as exc:
                unsendable.append((r, _unsendable(exc)))
        for r, why in unsendable:  # dead now, like a body a worker cannot decode (reported
            await r.fail(why, dead=True)  # by the queue's consumer observer, as every settle)
            held.remove(r)
            log.warning("job %s is dead: %s", r.id, why)
        if not parts:
            return None
        return HandOver(b'{"deliveries":[' + b",".join(parts) + b"]}", gone, give_back)
    except BaseException:
        await give_back("the answer could not be built")
        raise


class HandOver(Response[Any]):
    """The 200 answer of ``:reserve`` (JSON already encoded), sent only to a client still
    there: when the client is gone before it goes out, or sending it fails, the jobs it
    carries are handed back."""

    def __init__(self, content: bytes, gone: asyncio.Future[Any], give_back: GiveBack
                 ) -> None:
        super().__init__(content, status_code=200, media_type=MediaType.JSON)
        self.gone = gone
        self.give_back = give_back

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:
        """Litestar's response, wrapped so that it hands back what it could not send."""
        inner = super().to_asgi_response(*args, **kwargs)
        return _Sending(inner, self.gone, self.give_back)  # type: ignore[return-value]


class _Sending:
    """The ASGI app of a ``HandOver``."""

    def __init__(self, inner: ASGIResponse, gone: asyncio.Future[Any], give_back: GiveBack
                 ) -> None:
        self.inner, self.gone, self.give_back = inner, gone, give_back

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the answer unless the client is gone; hand the jobs back if it was not."""
        sent = False
        try:
            # one turn of the loop: a hang-up the server has already seen reaches ``gone``
            # (uvicorn drops what is sent after it, without an error)
            await asyncio.sleep(0)
            if not self.gone.done():
                await self.inner(scope, receive, send)
                sent = True
        finally:
            why = ("the client is gone" if self.gone.done() and not self.gone.cancelled()
                   else "the answer could not be sent")
            self.gone.cancel()
            if not sent:
                await self.give_back(why)
