"""Limit routes of the JSON API (docs/limits.md, docs/http.md#limits): read every topic's limit,
and set or clear one topic's (rate, concurrency, and the limit each of its fairness keys is held
to). Each calls the ``AsyncQueue`` method a Python operator calls; the library checks the values
(422 naming the field)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, get, post

from ...limits.rates import TopicLimit
from ..auth import needs
from .bodies import body, decode_optional
from .common import PREFIX, READ_ERRORS, WRITE_ERRORS, QueueParam, TopicParam, errors, served

READ, ADMIN = needs("read"), needs("admin")
RateText = Annotated[str, msgspec.Meta(max_length=64, examples=["100/s"], description=(
    "COUNT/PERIOD: \"100/s\", \"5/m\", \"1000/h\", \"10/500ms\"."))]
Conc = Annotated[int, msgspec.Meta(ge=1, le=100_000)]


class LimitBody(msgspec.Struct, forbid_unknown_fields=True):
    """The whole limit of a topic (a field left out: not limited so; none at all, or
    ``clear``: the limit is removed)."""

    rate: RateText | None = None
    concurrency: Conc | None = None
    key_rate: RateText | None = None
    key_concurrency: Conc | None = None
    clear: bool = False


class LimitAnswer(msgspec.Struct):
    """A topic's limit now; ``changed`` is false when it was so already (null: only read)."""

    topic: str
    rate: str | None
    concurrency: int | None
    key_rate: str | None
    key_concurrency: int | None
    changed: bool | None = None


class LimitsAnswer(msgspec.Struct):
    """Every limited topic's limit."""

    limits: list[LimitAnswer]


def _answer(topic: str, limit: TopicLimit | None, changed: bool | None) -> LimitAnswer:
    limit = limit or TopicLimit()
    return LimitAnswer(topic, None if limit.rate is None else str(limit.rate), limit.concurrency,
                       None if limit.key_rate is None else str(limit.key_rate),
                       limit.key_concurrency, changed)


@get(f"{PREFIX}/limits", opt=READ, tags=["operators"], operation_id="listLimits",
     summary="Every topic's limit", responses=errors(*READ_ERRORS))
async def list_limits(request: Request[Any, Any, Any], queue: QueueParam) -> LimitsAnswer:
    """The limited topics: rate, concurrency, key rate and key concurrency."""
    found = await served(request, queue).limits()
    return LimitsAnswer([_answer(topic, limit, None) for topic, limit in sorted(found.items())])


@post(f"{PREFIX}/topics/:limit/{{topic:str}}", opt=ADMIN, status_code=200,
      tags=["operators"], operation_id=body("limitTopic", LimitBody, False),
      summary="Set or clear a topic's limit", responses=errors(*WRITE_ERRORS))
async def limit_topic(request: Request[Any, Any, Any], queue: QueueParam, topic: TopicParam
                      ) -> LimitAnswer:
    """Set the whole limit of the topic across every consumer (an empty body, or ``clear``,
    removes it); consumers follow within 1 s."""
    data = await decode_optional(request, LimitBody) or LimitBody()
    aq = served(request, queue)
    changed = await aq.limit(topic, data.rate, data.concurrency, key_rate=data.key_rate,
                             key_concurrency=data.key_concurrency,
                             clear=data.clear or (data.rate is None and data.concurrency is None
                                                  and data.key_rate is None
                                                  and data.key_concurrency is None))
    return _answer(topic, (await aq.limits()).get(topic), changed)


ROUTES = [list_limits, limit_topic]
