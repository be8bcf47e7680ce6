"""A reserve round of a topic the last round found neither paused nor limited is ONE round trip
(a pipeline of the pause flag, the read, then the pause flag again and the limit: the route
after the read), and a pause or a limit that came since still holds: what that read took is
handed back, not run (docs/pull.md)."""

from __future__ import annotations

from typing import Any

import pytest

import streamdelay as sd
from streamdelay.consume.core.cadence import FLEET, PRUNE, RECLAIM, Cadence
from streamdelay.consume.core.consumer_core import ConsumerCore
from streamdelay.consume.core.reserving import ReserveState, reserve_args, round_plan
from streamdelay.io.config import QueueConfig
from streamdelay.protocol.plan import Command, Commands
from tests.integration.test_pull import promote

pytestmark = pytest.mark.timeout(60)
CFG = QueueConfig("orders", "redis://127.0.0.1:1/0")


def _steps(state: ReserveState, replies: list[Any], block_ms: int = 1000, now: float = 0.0
           ) -> list[Any]:
    """The steps one round sends at ``now`` (monotonic s), answered with ``replies`` in turn."""
    args = reserve_args("t", "g", "c", 1, 1)
    plan = round_plan(CFG, state, args, block_ms, now, False)
    seen: list[Any] = []
    answers = iter(replies)
    try:
        step = next(plan)
        while True:
            seen.append(step)
            step = plan.send(next(answers))
    except StopIteration:
        return seen


def _settled_state() -> ReserveState:
    """A state whose group is registered and whose reclaim, prune and fleet renewal
    (docs/keys.md#fleet) are not due."""
    key = ("g", "t")
    cadence = Cadence()  # its own, not the process's: nothing of it is due
    for duty, scope in ((RECLAIM, key), (PRUNE, key), (FLEET, ("c",))):
        cadence.ran(duty, CFG.name, scope, 0.0, 1e18)
    return ReserveState(ConsumerCore(CFG.name, cadence=cadence, registered={key}))


def test_a_plain_topic_is_checked_and_read_in_one_round_trip() -> None:
    state = _settled_state()
    clock = [b"1764000000", b"0"]  # TIME: read with every take (docs/expiry.md)
    first = _steps(state, [[0, None, 0], [None, clock]])  # checks (one pipeline), the read
    assert isinstance(first[0], Commands) and len(first) == 2
    assert isinstance(first[1], Commands)
    assert [c.args[0] for c in first[1].commands] == ["XREADGROUP", "TIME"]
    [only] = _steps(state, [[0, None, clock, 0, None]])
    assert isinstance(only, Commands)
    # the limit is read after the read: one set while the read waited holds (the core's sort)
    assert [c.args[0] for c in only.commands] == ["HEXISTS", "XREADGROUP", "TIME", "HEXISTS",
                                                  "HGET"]
    # every REFRESH_S the same round trip also looks whether the topic became staged
    # (docs/priorities.md): one command more twice a second, none more per read
    [later] = _steps(state, [[0, None, clock, 0, None, 0]], now=0.6)
    assert [c.args[0] for c in later.commands] == ["HEXISTS", "XREADGROUP", "TIME", "HEXISTS",
                                                   "HGET", "HEXISTS"]
    assert later.commands[5].args[1].endswith(":staged")
    [again] = _steps(state, [[0, None, clock, 0, None]], now=0.7)
    assert len(again.commands) == 5


def test_a_paused_topic_is_not_read_when_not_known_plain() -> None:
    steps = _steps(_settled_state(), [[1, None, 0]])
    assert len(steps) == 1 and not any(isinstance(c, Command) and c.args[0] == "XREADGROUP"
                                       for c in steps[0].commands)


def test_a_pause_after_a_plain_round_hands_the_read_back(queue: sd.Queue) -> None:
    queue.enqueue("other", 1)  # the queue exists
    assert queue.reserve("t") == []  # the topic is known plain now
    assert queue.pause("t")
    queue.enqueue("t", 1, id="p")
    promote(queue)
    assert queue.reserve("t", wait=0.3) == []
    info = queue.get("p")
    assert info is not None and info.state == "ready" and info.attempts == 0  # handed back
    assert queue.resume("t")
    [r] = queue.reserve("t", wait=1)
    assert (r.id, r.attempt) == ("p", 1)
    r.ack()


def test_a_limit_set_after_a_plain_round_is_taken_through_the_take(queue: sd.Queue) -> None:
    queue.enqueue("other", 1)
    assert queue.reserve("t") == []  # the topic is known plain now
    queue.limit("t", concurrency=1)
    queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(3)])
    promote(queue, 3)
    first = queue.reserve("t", count=3, wait=0.3)
    assert len(first) == 1  # the concurrency, not the count
    assert queue.reserve("t", count=3) == []
    for job_id in ("j0", "j1", "j2"):
        info = queue.get(job_id)
        assert info is not None
        assert info.state == ("reserved" if job_id == first[0].id else "ready")
    first[0].ack()
