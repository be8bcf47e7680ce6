"""Bad input, tried systematically (docs/guarantees.md): every public entry point gets random ids,
topics, bodies, delays, times, headers, ttr, max_attempts, backoff and flags.

Each argument is drawn either from its documented valid set or from outside it, and the test
knows which (an oracle written from the documented rules, not from the implementation). A call
whose arguments are all valid must succeed with the documented result; a call with a bad argument
must raise a ``StreamdelayError`` whose ``field`` is one of the bad arguments and whose message
starts with that name, and must leave every key of the queue exactly as it was (DUMP compared).
Never a raw TypeError, KeyError or redis error.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
import types
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import msgspec
import pytest
import redis
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import streamdelay as sd
from streamdelay.io.agreement import agree_partitions_sync
from tests.support.redis_server import RedisServer

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BODY_LIMIT = 2048
ID_RULE = re.compile(r"[A-Za-z0-9_.:@/+=-]{1,128}")
TOPIC_RULE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
GROUP_RULE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
CONSUMER_RULE = re.compile(r"[A-Za-z0-9_.:@-]{1,128}")
TEN_YEARS = 10 * 365 * 86400.0
WEEK = 7 * 86400.0


@dataclass(frozen=True)
class Arg:
    """A drawn argument and whether the documented rules accept it."""

    value: Any
    ok: bool


def good(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Arg]:
    """Values the documentation accepts."""
    return strategy.map(lambda v: Arg(v, True))


def bad(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Arg]:
    """Values the documentation refuses."""
    return strategy.map(lambda v: Arg(v, False))


@dataclass(frozen=True)
class Field:
    """How to draw one argument: from its valid set, or from outside it."""

    good: st.SearchStrategy[Arg]
    bad: st.SearchStrategy[Arg]

    @property
    def any(self) -> st.SearchStrategy[Arg]:
        """Either kind."""
        return st.one_of(self.good, self.bad)


UNRELATED = st.one_of(st.binary(max_size=8), st.lists(st.integers(), max_size=2),
                      st.builds(object), st.just({"a": 1}), st.decimals(allow_nan=False))


def names(rule: re.Pattern[str], longest: int) -> Field:
    """Identifiers (ids, topics, groups ...) following ``rule``, and ones that break it."""
    text_bad = st.text(max_size=longest + 8).filter(lambda s: not rule.fullmatch(s))
    return Field(
        good(st.from_regex(rule, fullmatch=True)),
        bad(st.one_of(text_bad, st.just(""), st.just("a\n"), st.just("x" * (longest + 1)),
                      st.just("a b"), st.just("{q}"), st.just("é"), st.integers(),
                      st.floats(), st.booleans(), UNRELATED)),
    )


def optional(field: Field) -> Field:
    """``field`` or None (None: not given, always valid)."""
    return Field(st.one_of(st.just(Arg(None, True)), field.good), field.bad)


def seconds(low: float, high: float) -> Field:
    """Seconds (int, float or timedelta) inside [low, high], and values outside or of bad type."""
    inside = st.one_of(
        st.integers(math.ceil(low), math.floor(high)),
        st.floats(low, high),
        st.timedeltas(timedelta(seconds=math.ceil(low)), timedelta(seconds=math.floor(high))),
    )
    outside = st.one_of(
        st.integers(max_value=math.ceil(low) - 1), st.integers(min_value=math.floor(high) + 1),
        st.just(10 ** 400), st.just(-(10 ** 400)),
        st.floats(max_value=low, exclude_max=True), st.floats(min_value=high, exclude_min=True),
        st.sampled_from([math.nan, math.inf, -math.inf]),
        st.timedeltas(max_value=timedelta(seconds=low - 1)) if low >= 1
        else st.timedeltas(max_value=timedelta(microseconds=-1)),
        st.booleans(), st.text(max_size=4), st.just(Decimal("1")), st.just("30s"), UNRELATED,
    )
    return Field(good(inside), bad(outside))


@dataclass(frozen=True)
class When:
    """An ``at`` argument built at call time relative to the clock (the server is this host)."""

    kind: str  # "epoch" | "aware" | "naive"
    offset: float

    def value(self) -> Any:
        """The ``at`` value for right now."""
        now = time.time()
        if self.kind == "epoch":
            return now + self.offset
        stamp = datetime.fromtimestamp(now + self.offset, timezone.utc)
        return stamp if self.kind == "aware" else stamp.replace(tzinfo=None)


def at_values() -> Field:
    """Absolute times: future or within the past tolerance (valid), far past, naive, junk."""
    future = st.floats(60, 3e8)
    recent = st.floats(-3000, -60)  # in the past but within the 1 h tolerance: runs at once
    far_past = st.floats(-1.5e9, -7200)
    return Field(
        good(st.builds(When, st.sampled_from(["epoch", "aware"]), st.one_of(future, recent))),
        bad(st.one_of(
            st.builds(When, st.sampled_from(["epoch", "aware"]), far_past),
            st.builds(When, st.just("naive"), st.one_of(future, recent)),
            st.sampled_from([-1.0, 1e12, math.nan, math.inf, True, "2030-01-01", 10 ** 400]),
            UNRELATED,
        )),
    )


def realise(value: Any) -> Any:
    """Turn a ``When`` into its time; anything else is passed as drawn."""
    return value.value() if isinstance(value, When) else value


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12,
)


def bodies() -> Field:
    """Bodies: JSON-encodable values and raw bytes under the limit; unencodable or too big ones."""
    return Field(
        good(st.one_of(JSONISH, st.binary(max_size=200), st.just(b"x" * BODY_LIMIT))),
        bad(st.one_of(
            st.binary(min_size=BODY_LIMIT + 1, max_size=BODY_LIMIT + 50),
            st.text(min_size=BODY_LIMIT + 1, max_size=BODY_LIMIT + 50,
                    alphabet=st.characters(codec="ascii")),
            st.builds(object), st.just(complex(1, 2)), st.just({"k": object()}),
            st.just({(1, 2): 3}), st.just("\ud800"), st.just(self_containing()),
            st.sampled_from([math.nan, math.inf, -math.inf]).map(lambda v: [v]),
            st.just({"deep": nested(200)}),
        )),
    )


def nested(depth: int) -> list[Any]:
    """A list nested ``depth`` levels deep (past the documented depth limit of bodies)."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def self_containing() -> list[Any]:
    """A list that contains itself (cannot be encoded)."""
    loop: list[Any] = []
    loop.append(loop)
    return loop


HEADER_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)


def headers() -> Field:
    """Small str -> str maps, and oversized, mistyped or non-UTF-8 ones."""
    return Field(
        good(st.dictionaries(HEADER_TEXT.filter(bool), HEADER_TEXT, max_size=6)),
        bad(st.one_of(
            st.just({"": "x"}), st.just({"k": 1}), st.just({1: "v"}), st.just({"k": "\udcff"}),
            st.just({f"k{i}": "v" for i in range(33)}), st.just({"k": "v" * 5000}),
            st.just([("k", "v")]), st.text(max_size=3), st.integers(),
        )),
    )


def backoffs() -> Field:
    """Retry policies: ``Backoff``, non-empty lists/tuples of seconds; anything else."""
    step = st.floats(0, 1e6)
    return Field(
        good(st.one_of(
            st.builds(sd.Backoff, base=st.floats(0, 100), cap=st.floats(0, 4000),
                      jitter=st.booleans()),
            st.lists(step, min_size=1, max_size=10),
            st.lists(step, min_size=1, max_size=5).map(tuple))),
        bad(st.one_of(
            st.just([]), st.just(()), st.just([-1.0]), st.just([math.nan]), st.just([1, "2"]),
            st.just("1,2"), st.just(b"12"), st.just(5), st.just({"base": 1}),
            st.just(types.SimpleNamespace(base=1.0)), st.just([1.0] * 1001),
        )),
    )


def ints(low: int, high: int) -> Field:
    """Ints inside [low, high]; ints outside, bools, floats, strings."""
    return Field(
        good(st.integers(low, high)),
        bad(st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1),
                      st.booleans(), st.floats(), st.just("3"), st.just(Decimal(3)))),
    )


@st.composite
def arg_sets(draw: st.DrawFn, spec: dict[str, Field]) -> dict[str, Arg]:
    """One value per argument; at most two arguments are drawn bad, so valid calls are common."""
    broken = draw(st.sets(st.sampled_from(sorted(spec)), max_size=2))
    return {name: draw(field.bad if name in broken else field.good)
            for name, field in spec.items()}


FLAGS = Field(good(st.booleans()), bad(st.one_of(st.none(), st.integers(), st.text(max_size=2))))


# --- fixtures and checks -------------------------------------------------------------------

@pytest.fixture(scope="module")
def fuzz_queue() -> Iterator[sd.Queue]:
    """One queue (and server) for the whole module, with a small body limit."""
    with RedisServer() as server:
        queue = sd.Queue(f"fz{uuid.uuid4().hex[:8]}", url=server.url, max_body_bytes=BODY_LIMIT)
        # first contact records the partition count; later calls start from here
        agree_partitions_sync(queue.client, server.url, queue.name, 1, None)
        yield queue
        queue.close()


def snapshot(queue: sd.Queue) -> dict[bytes, bytes | None]:
    """Every key of the queue with its serialized value (DUMP): equal snapshots, equal data."""
    client = queue.client
    assert isinstance(client, redis.Redis)
    pattern = f"sd:{{{queue.name}#*"
    return {key: client.dump(key) for key in client.scan_iter(match=pattern, count=1000)}


def bad_fields(args: dict[str, Arg]) -> set[str]:
    """The names of the arguments drawn from outside their valid set."""
    return {name for name, arg in args.items() if not arg.ok}


def attempt(queue: sd.Queue, call: Callable[[], Any], refused_if: set[str]) -> Any:
    """Run ``call``: with no bad argument it must succeed; else be refused, writing nothing."""
    before = snapshot(queue)
    try:
        result = call()
    except sd.StreamdelayError as exc:
        assert refused_if, f"valid arguments were refused: {exc!r}"
        assert exc.field in refused_if, f"{exc!r} names {exc.field!r}, bad were {refused_if}"
        assert str(exc).startswith(f"{exc.field}:"), str(exc)
        assert snapshot(queue) == before, "a refused call wrote to Redis"
        event(f"refused: {exc.field}")
        return exc
    event("accepted")
    assert not refused_if, f"bad {sorted(refused_if)} accepted, returned {result!r}"
    return result


def values(args: dict[str, Arg]) -> dict[str, Any]:
    """The drawn values, ready to pass as keyword arguments."""
    return {name: realise(arg.value) for name, arg in args.items()}


# --- producer ------------------------------------------------------------------------------

# a schedule tick's id, <name>@<digits>: only the schedule's own firing enqueues one
# (docs/schedules.md#exactly-once-per-tick), so a producer's id of that shape is refused
TICK_SHAPE = re.compile(r"[A-Za-z0-9_.:/+=-]{1,100}@[0-9]+")


def producer_ids() -> Field:
    """Ids a producer may pass (``ID_RULE``, not tick-shaped) and ones it may not."""
    ids = names(ID_RULE, 128)
    return Field(ids.good.filter(lambda arg: not TICK_SHAPE.fullmatch(arg.value)),
                 st.one_of(ids.bad, bad(st.from_regex(TICK_SHAPE, fullmatch=True)
                                        .filter(lambda s: ID_RULE.fullmatch(s)))))


ENQUEUE_ARGS = {
    "topic": names(TOPIC_RULE, 128),
    "body": bodies(),
    "delay": optional(seconds(0, TEN_YEARS)),
    "at": optional(at_values()),
    "id": optional(producer_ids()),
    "ttr": optional(seconds(1, WEEK)),
    "max_attempts": optional(ints(1, 1000)),
    "backoff": optional(backoffs()),
    "headers": optional(headers()),
    "replace": FLAGS,
}


def with_rules(args: dict[str, Arg]) -> set[str]:
    """Bad fields, plus ``delay`` when both delay and at are given (one or the other)."""
    refused = bad_fields(args)
    if args["delay"].value is not None and args["at"].value is not None:
        refused.add("delay")
    return refused


@FUZZ
@given(args=arg_sets(ENQUEUE_ARGS))
def test_enqueue_accepts_exactly_the_documented_values(
    fuzz_queue: sd.Queue, args: dict[str, Arg]
) -> None:
    kwargs = values(args)
    topic, body = kwargs.pop("topic"), kwargs.pop("body")
    result = attempt(fuzz_queue, lambda: fuzz_queue.enqueue(topic, body, **kwargs),
                     with_rules(args))
    if isinstance(result, sd.StreamdelayError):
        return
    assert isinstance(result, sd.EnqueueResult) and result.created and result.state == "delayed"
    assert kwargs["id"] is None or result.id == kwargs["id"]
    info = fuzz_queue.get(result.id)
    assert info is not None and info.topic == topic and info.due == result.due
    assert info.headers == (kwargs["headers"] or {})
    if isinstance(body, bytes):
        assert info.body == body
    else:  # JSON round trip: compare with the JSON reading of the same value
        assert msgspec.json.encode(info.body) == msgspec.json.encode(
            msgspec.json.decode(msgspec.json.encode(body)))
    assert fuzz_queue.cancel(result.id) is True


SPEC_ARGS = {key: ENQUEUE_ARGS[key] for key in ("topic", "body", "delay", "id", "ttr")}


@FUZZ
@given(batch=st.lists(arg_sets(SPEC_ARGS), min_size=1, max_size=4),
       wrapper=st.sampled_from(["list", "tuple", "generator"]))
def test_enqueue_many_is_all_or_nothing(
    fuzz_queue: sd.Queue, batch: list[dict[str, Arg]], wrapper: str
) -> None:
    specs = [sd.JobSpec(**values(args)) for args in batch]
    refused = set().union(*(bad_fields(args) for args in batch))
    sent: Any = {"list": specs, "tuple": tuple(specs), "generator": (s for s in specs)}[wrapper]
    result = attempt(fuzz_queue, lambda: fuzz_queue.enqueue_many(sent), refused)
    if isinstance(result, sd.StreamdelayError):
        return
    assert len(result) == len(specs)
    first_seen: set[str] = set()
    for spec, row in zip(specs, result, strict=True):  # a repeated id: created=False
        assert spec.id is None or row.id == spec.id
        assert row.created is (row.id not in first_seen)
        first_seen.add(row.id)
    for job_id in first_seen:
        assert fuzz_queue.cancel(job_id) is True


@FUZZ
@given(specs=st.one_of(st.none(), st.integers(), st.builds(object), st.just(sd.JobSpec("t")),
                       st.lists(st.one_of(st.just({"topic": "t"}), st.just(("t", 1)),
                                          st.integers()), min_size=1, max_size=2)))
def test_enqueue_many_refuses_what_is_not_a_list_of_jobspecs(
    fuzz_queue: sd.Queue, specs: Any
) -> None:
    attempt(fuzz_queue, lambda: fuzz_queue.enqueue_many(specs), {"specs"})


# --- by id, dead letters, claim --------------------------------------------------------------

@FUZZ
@given(args=arg_sets({"id": names(ID_RULE, 128), "delay": optional(seconds(0, TEN_YEARS)),
                      "at": optional(at_values()), "topic": optional(names(TOPIC_RULE, 128))}))
def test_operations_by_id_on_unknown_jobs(fuzz_queue: sd.Queue, args: dict[str, Arg]) -> None:
    job_id, delay, at, topic = args["id"], args["delay"], args["at"], args["topic"]
    jid = job_id.value
    refused = bad_fields({"id": job_id})
    assert attempt(fuzz_queue, lambda: fuzz_queue.get(jid), refused) in (None,) or refused
    assert attempt(fuzz_queue, lambda: fuzz_queue.cancel(jid), refused) is False or refused
    when = {"delay": delay, "at": at}
    resched = refused | with_rules({**when, "id": job_id})
    if delay.value is None and at.value is None:
        resched.add("delay")  # one of them is required
    result = attempt(fuzz_queue, lambda: fuzz_queue.reschedule(jid, **values(when)), resched)
    assert result is False or resched
    dead = refused | bad_fields({"topic": topic, "delay": delay})
    result = attempt(fuzz_queue, lambda: fuzz_queue.dead_replay(
        topic.value, jid, realise(delay.value)), dead)
    assert result == 0 or dead
    purge = refused | bad_fields({"topic": topic})
    result = attempt(fuzz_queue, lambda: fuzz_queue.dead_purge(topic.value, jid), purge)
    assert result == 0 or purge


@FUZZ
@given(args=arg_sets({"topic": optional(names(TOPIC_RULE, 128)), "limit": ints(1, 1_000_000)}))
def test_dead_list_arguments(fuzz_queue: sd.Queue, args: dict[str, Arg]) -> None:
    topic, limit = args["topic"], args["limit"]
    result = attempt(fuzz_queue, lambda: fuzz_queue.dead_list(topic.value, limit.value),
                     bad_fields(args))
    assert isinstance(result, sd.StreamdelayError) or result == []


@FUZZ
@given(args=arg_sets({"group": names(GROUP_RULE, 64), "topic": optional(names(TOPIC_RULE, 128)),
                      "min_idle": optional(seconds(0, TEN_YEARS)),
                      "to": optional(names(CONSUMER_RULE, 128))}))
def test_claim_arguments(fuzz_queue: sd.Queue, args: dict[str, Arg]) -> None:
    kwargs = values(args)
    refused = bad_fields(args)
    # no worker ever registered a group here: valid arguments get GroupNotFound naming "group"
    result = attempt(fuzz_queue, lambda: fuzz_queue.claim(
        kwargs.pop("group"), **kwargs), refused or {"group"})
    assert isinstance(result, sd.StreamdelayError)
    assert refused or isinstance(result, sd.GroupNotFound)


def test_async_queue_refuses_like_the_blocking_one(fuzz_queue: sd.Queue) -> None:
    async def scenario() -> list[str | None]:
        async with sd.AsyncQueue(fuzz_queue.name, url=fuzz_queue.config.url) as aq:
            fields = []
            for call in (lambda: aq.enqueue("a b", 1), lambda: aq.enqueue("t", delay=-1),
                         lambda: aq.get("a\n"), lambda: aq.enqueue_many(5),  # type: ignore[arg-type]
                         lambda: aq.reschedule("x"), lambda: aq.claim("g", to="")):
                try:
                    await call()
                except sd.StreamdelayError as exc:
                    fields.append(exc.field)
            return fields

    before = snapshot(fuzz_queue)
    assert asyncio.run(scenario()) == ["topic", "delay", "id", "specs", "delay", "to"]
    assert snapshot(fuzz_queue) == before


# --- queue and worker construction ---------------------------------------------------------

QUEUE_ARGS = {
    "name": names(re.compile(r"[A-Za-z0-9_.-]{1,64}"), 64),
    "ttr": optional(seconds(1, WEEK)),
    "max_attempts": optional(ints(1, 1000)),
    "max_body_bytes": optional(ints(1, 512 << 20)),
    "partitions": optional(ints(1, 1024)),
    "serializer": optional(Field(good(st.sampled_from(["json", "msgpack"])),
                                 bad(st.sampled_from(["pickle", "", 1])))),
}


@FUZZ
@given(args=arg_sets(QUEUE_ARGS))
def test_queue_options(args: dict[str, Arg]) -> None:
    name = args.pop("name")
    given_args = {k: v.value for k, v in args.items() if v.value is not None}
    refused = bad_fields({"name": name, **args})
    try:
        queue = sd.Queue(name.value, url="redis://127.0.0.1:1/0", **realise_all(given_args))
    except sd.StreamdelayError as exc:
        assert exc.field in refused and str(exc).startswith(f"{exc.field}:"), repr(exc)
        return
    assert not refused, f"bad {refused} accepted"
    assert queue.name == name.value


def realise_all(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``realise`` every value of a keyword dict."""
    return {k: realise(v) for k, v in kwargs.items()}


class Order(msgspec.Struct):
    """A body type a handler may ask for."""

    order_id: int


WORKER_ARGS = {
    "group": names(GROUP_RULE, 64),
    "concurrency": ints(1, 100_000),
    "consumer": optional(names(CONSUMER_RULE, 128)),
    "handler_timeout": optional(seconds(0.001, TEN_YEARS)),
    "block": seconds(0.01, 60),
    "reclaim_interval": seconds(0.05, 3600),
    "shutdown_grace": seconds(0, TEN_YEARS),
}


@FUZZ
@given(args=arg_sets(WORKER_ARGS), handler=arg_sets({
    "topic": names(TOPIC_RULE, 128),
    "body": Field(good(st.sampled_from([None, dict, list, bytes, int, Any, Order])),
                  bad(st.sampled_from([5, "str", object(), print, 1.5])))}))
def test_worker_options_and_handler_registration(
    fuzz_queue: sd.Queue, args: dict[str, Arg], handler: dict[str, Arg]
) -> None:
    topic, body_type = handler["topic"], handler["body"]
    try:
        worker = sd.Worker(fuzz_queue, **values(args))
    except sd.StreamdelayError as exc:
        refused = bad_fields(args)
        assert exc.field in refused and str(exc).startswith(f"{exc.field}:"), repr(exc)
        return
    assert not bad_fields(args), f"bad {bad_fields(args)} accepted"
    try:
        worker.handler(topic.value, body=body_type.value)(lambda job: None)
    except sd.StreamdelayError as exc:
        refused = bad_fields({"topic": topic, "body": body_type})
        assert exc.field in refused and str(exc).startswith(f"{exc.field}:"), repr(exc)
        return
    assert topic.ok and body_type.ok


@pytest.mark.parametrize("queue_arg", [None, "orders", 5, object(), sd.JobSpec("t")])
def test_worker_needs_a_queue(queue_arg: Any) -> None:
    with pytest.raises(sd.ConfigError) as caught:
        sd.Worker(queue_arg)
    assert caught.value.field == "queue"
