"""The worker's state has owners (issue 24, item 5): each loop changes only the typed state it
owns, through that state's methods, and the public attributes of ``sd.Worker`` read as before.

No server: the states are exercised alone, and the ownership rule is checked on the source."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import streamdelay as sd
from streamdelay.consume.acks import AckLoop, PendingAcks
from streamdelay.consume.core.taking import parse_events, parse_read, streams_of
from streamdelay.consume.counts import KINDS, Counts
from streamdelay.consume.delivery import Delivery
from streamdelay.consume.handler_slots import Slots
from streamdelay.consume.topic_views import TopicViews
from streamdelay.io.config import QueueConfig
from streamdelay.io.loop_supervision import OwnedTasks
from streamdelay.protocol.deliveries import ack_call, read_runs
from streamdelay.protocol.keys import PartitionKeys

CONSUMER = Path(sd.__file__).parent / "consume"
# the names under which a module other than worker.py sees the worker
HOST_NAMES = {"worker", "host"}


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
        if isinstance(node, ast.Attribute) and node.attr == "host":  # self.host
            return ast.Name(id="host")
    return node


def _writes_to_worker(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            assert isinstance(node, ast.stmt)
            if (isinstance(target, (ast.Attribute, ast.Subscript))
                    and isinstance(root := _root(target), ast.Name)
                    and root.id in HOST_NAMES):
                lines.append(node.lineno)
    return lines


def test_no_consumer_module_writes_the_workers_state() -> None:
    """``worker.x = ...``, ``worker.views.paused = ...`` or ``worker.counts[k] += 1`` outside
    worker.py is a write into state another module owns: it goes through a method instead."""
    found = {path.name: lines for path in sorted(CONSUMER.glob("*.py"))
             if path.name != "worker.py"
             and (lines := _writes_to_worker(ast.parse(path.read_text())))}
    assert found == {}


def test_the_ownership_check_sees_a_write() -> None:
    """The check above can fail: the writes it was written against are found."""
    assert _writes_to_worker(ast.parse("worker.views.paused = p\nworker.counts['x'] += 1\n"
                                       "self.host.handlers = {}\n")) == [1, 2, 3]
    assert _writes_to_worker(ast.parse("worker.counts.add('x')\nown.inherited = set()\n")) == []


def test_views_are_written_through_their_methods() -> None:
    async def scenario() -> None:
        views = TopicViews()
        assert views.set_paused(frozenset({"a"})) and not views.set_paused(frozenset({"a"}))
        assert views.paused == {"a"} and not views.changed.is_set()  # pauses wake no take
        assert views.set_limited(frozenset({"b"})) and views.changed.is_set()
        views.changed.clear()
        assert not views.set_limited(frozenset({"b"})) and not views.changed.is_set()
        assert views.plain(["a", "b", "c"]) == ["c"]
        views.wake()
        assert views.changed.is_set()
        views.renew()
        assert not views.changed.is_set()

    asyncio.run(scenario())


def test_counts_read_as_a_dict_and_are_added_to() -> None:
    counts = Counts()
    assert counts == dict.fromkeys(KINDS, 0) and isinstance(counts, dict)
    counts.add("handled")
    counts.add("released", 3)
    assert counts["handled"] == 1 and counts["released"] == 3


def test_owned_tasks_are_awaited() -> None:
    async def scenario() -> list[str]:
        done: list[str] = []
        tasks = OwnedTasks()

        async def work() -> None:
            await asyncio.sleep(0.01)
            done.append("handed back")

        tasks.spawn(work())
        assert tasks
        await tasks.wait(5.0)
        assert not tasks  # forgotten once ended
        return done

    assert asyncio.run(scenario()) == ["handed back"]


def test_ack_loop_writes_what_is_added() -> None:
    sent: list[tuple[int, list[str]]] = []

    async def send(partition: int, flat: list[str]) -> None:
        sent.append((partition, list(flat)))

    async def scenario() -> None:
        acks = AckLoop(send)
        loop = asyncio.create_task(acks.run())
        acks.add(0, "t", "j1", "1-0")
        while acks.pending:
            await asyncio.sleep(0.001)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)

    asyncio.run(scenario())
    assert sent == [(0, ["t", "j1", "1-0"])]


def test_a_touch_marks_a_delivery_through_its_method() -> None:
    delivery = Delivery(0, "t", "1-0", "j1")
    delivery.report_progress(b"1")
    assert not delivery.touched(5.0, b"1", lost=False)
    assert delivery.last_touch == 5.0 and not delivery.progress_fresh
    delivery.report_progress(b"2")  # reported while the touch was in flight: still fresh
    assert delivery.touched(6.0, b"1", lost=True) and delivery.lost and delivery.progress_fresh
    assert not delivery.touched(7.0, b"2", lost=True)  # found lost once


def test_slots_count_free_handlers() -> None:
    slots = Slots(2)
    slots.inflight[(0, "t", "1-0")] = Delivery(0, "t", "1-0")
    assert slots.free() == 1 and slots.tasks() == []


def test_a_read_batch_counts_fewer_free_slots_as_none() -> None:
    # the process executor reads once as many slots are free as it has children, not per job
    slots = Slots(4, batch=2)
    slots.inflight.update({(0, "t", f"{n}-0"): Delivery(0, "t", f"{n}-0") for n in range(3)})
    assert slots.free() == 0  # one free: below the batch
    del slots.inflight[(0, "t", "0-0")]
    assert slots.free() == 2
    config = QueueConfig("q", "redis://127.0.0.1:1/0")
    worker = sd.Worker(config, executor="process", processes=3)  # 2 slots a child
    assert (worker.free_slots(), sd.Worker(config).free_slots()) == (6, 32)


def test_the_workers_public_attributes_are_unchanged() -> None:
    worker = sd.Worker(QueueConfig("q", "redis://127.0.0.1:1/0"), concurrency=3)

    @worker.handler("t")
    def handle(job: sd.Job) -> None:
        """Nothing to do."""

    assert worker.counts == dict.fromkeys(KINDS, 0)
    assert worker.inflight == {} and worker.running_jobs == {}
    assert worker.free_slots() == 3 and not worker.acks_pending and not worker.stopping
    assert worker.paused == frozenset() and worker.topics == ["t"]
    rebuilt = worker.replace(concurrency=5)
    assert rebuilt.free_slots() == 5 and rebuilt.handlers == worker.handlers


def test_acks_send_read_times_only_when_some_delivery_has_one() -> None:
    """docs/events.md#started: a batch whose deliveries carry read times sends them, in order
    (ackJobs); a batch without any sends none (ackJobs, what a queue without events pays)."""
    sent: list[tuple[list[str], list[int] | None]] = []

    async def send(partition: int, flat: list[str], values: Any = None,
                   reads: list[int] | None = None) -> None:
        sent.append((list(flat), reads))

    pending = PendingAcks()
    pending.add(0, "t", "j1", "1-0", read_ms=1700)
    pending.add(0, "t", "j2", "2-0")
    asyncio.run(pending.flush(send))
    pending.add(0, "t", "j3", "3-0")
    asyncio.run(pending.flush(send))
    assert sent == [(["t", "j1", "1-0", "t", "j2", "2-0"], [1700, 0]),
                    (["t", "j3", "3-0"], None)]
    assert not pending


def test_a_fresh_read_dates_started_until_a_heartbeat_is_sent() -> None:
    """An entry read with ``XREADGROUP >`` and the clock is fresh; an entry of the own pending
    list or one read without the clock is not (its settle reads the pending list)."""
    streams = streams_of([PartitionKeys("q", 0)], ["t"])
    reply = [[b"sd:{q#0}:t:t", [[b"5-0", {b"id": b"j"}]]]]
    (fresh,) = parse_read(reply, streams, 1700)
    (unknown,) = parse_read(reply, streams)
    assert fresh.fresh and fresh.now_ms == 1700 and not unknown.fresh
    assert ack_call(PartitionKeys("q", 0), "g", 0, ["t", "j", "5-0"], (), [1700]).script.name \
        == "ackJobs"
    assert ack_call(PartitionKeys("q", 0), "g", 0, ["t", "j", "5-0"]).script.name == "ackJobs"
    # the read times travel as runs (R, then count and time), what ackJobs parses
    assert read_runs([1700, 1700, 0, 1800, 1800, 1800]) == [3, 2, 1700, 1, 0, 3, 1800]
    assert read_runs([1700]) == [1, 1, 1700]
    assert [parse_events(v) for v in (b"10000", b"0", None, b"x")] == [True, False, False, False]
