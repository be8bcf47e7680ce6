"""Limits on several partitions (``streamdelay/consume/core/leasing.py``) against recorded replies,
no Redis: the three steps of a take on partition p != 0 and their calls, the settle plans that
send the lease calls with their own, and the receipt's unsigned lease flag."""

from __future__ import annotations

from typing import Any

import msgspec

from streamdelay.consume.core import leasing, staging
from streamdelay.consume.core.receipts import RECEIPT_VERSION, Receipt, is_genuine, signed
from streamdelay.consume.core.settle_plans import ack_plan
from streamdelay.consume.core.taking import Entry, take_now_plan, wait_plan
from streamdelay.limits.limit_plans import CONCURRENCY, DRAINED, GOT_ALL
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.plan import Command, EachCall
from streamdelay.protocol.scripts import ScriptCall
from tests.unit.test_replies import drive, name_of

P1 = PartitionKeys("orders", 1)
ZERO = PartitionKeys("orders", 0)
REC = b"s|0|1|1|5000|3|1-0|t|x"  # ttr 5000 ms


def _take(acquired: list[int], entries: list[Any], unleased: list[int], reason: int = GOT_ALL
          ) -> tuple[Any, list[Any]]:
    def answer(step: Any) -> Any:
        name = name_of(step)
        if name == "acquireLimit":
            return acquired
        if name == "takeGranted":
            return [entries, reason, 0, b"9-0"]
        if name == "nameLeases":
            return unleased
        return 1  # releaseJobs
    return drive(take_now_plan(P1, "g", "c", "t", 5), answer)


def test_a_take_on_partition_1_leases_in_slot_0_then_reads_then_names_the_leases() -> None:
    rows = [[b"1-0", [b"id", b"a", b"rec", REC]], [b"2-0", [b"id", b"b", b"rec", REC]]]
    (entries, reason, wait_ms, _), steps = _take([2, CONCURRENCY, 40, 1], rows, [])
    assert [name_of(s) for s in steps] == ["acquireLimit", "takeGranted", "nameLeases"]
    assert [s.keys for s in steps] == [(ZERO.limits,), P1.script_keys(), (ZERO.limits,)]
    assert steps[0].args[:2] == ("t", 5) and steps[1].args[-1] == 2  # at most the grant
    assert steps[2].args[2:] == ("1:1-0", 5000, "1:2-0", 5000)  # named <p>:<entry>, its ttr
    assert steps[0].args[2] == steps[2].args[1]  # one grant id for both
    assert [e.entry_id for e in entries] == ["1-0", "2-0"] and all(e.leased for e in entries)
    assert (reason, wait_ms) == (CONCURRENCY, 40)  # the limit held back the other three


def test_nothing_granted_reads_nothing() -> None:
    (entries, reason, wait_ms, _), steps = _take([0, CONCURRENCY, 70, 1], [], [])
    assert [name_of(s) for s in steps] == ["acquireLimit"]
    assert (entries, reason, wait_ms) == ([], CONCURRENCY, 70)


def test_an_entry_left_without_a_lease_is_handed_back_not_started() -> None:
    rows = [[b"1-0", [b"id", b"a", b"rec", REC]], [b"2-0", [b"id", b"b", b"rec", REC]]]
    (entries, reason, _, last), steps = _take([2, GOT_ALL, 0, 1], rows, [2], DRAINED)
    assert [name_of(s) for s in steps][-1] == "releaseJobs"
    assert steps[-1].args[1:] == ("t", "b", "2-0") and steps[-1].keys == P1.script_keys()
    assert [e.entry_id for e in entries] == ["1-0"]
    assert (reason, last) == (DRAINED, "9-0")  # drained: block on partition 1's stream


def test_waiting_for_a_lease_blocks_on_partition_0s_wake_list() -> None:
    _, steps = drive(wait_plan(P1, "t", CONCURRENCY, 300, "", 1000), lambda step: None)
    assert isinstance(steps[0], Command) and steps[0].args[1] == ZERO.limit_wake("t")


def test_a_settle_sends_the_lease_free_in_the_same_step() -> None:
    free = leasing.free_call("orders", [("t", "1:1-0")])
    count, steps = drive(ack_plan(P1, "g", 0, ["t", "a", "1-0"], (), (free,)),
                         lambda step: [1, 1])
    assert count == 1 and len(steps) == 1 and isinstance(steps[0], EachCall)
    assert [c.script.name for c in steps[0].calls] == ["ackJobs", "freeLeases"]
    count, steps = drive(ack_plan(P1, "g", 0, ["t", "a", "1-0"]), lambda step: 1)
    assert count == 1 and isinstance(steps[0], ScriptCall)  # without a lease: as before


def test_the_lease_book_frees_each_lease_once() -> None:
    book = leasing.LeaseBook()
    book.add([(1, "t", "1-0"), (2, "t", "1-0")])
    assert book.pop(1, [("t", "1-0"), ("t", "5-0")]) == [("t", "1:1-0")]
    assert book.pop(1, [("t", "1-0")]) == [] and len(book) == 1
    assert book.pop(2, [("t", "1-0")], keep=True) == [("t", "2:1-0")] and len(book) == 1
    book.forget(2, [("t", "1-0")])  # an ack batch with its free succeeded
    assert len(book) == 0
    assert leasing.ttr_of({b"rec": REC}) == 5000 and leasing.ttr_of({b"rec": b"bad"}) == 60000


def test_a_lease_expires_after_the_ttr_of_a_record_with_a_binary_blob() -> None:
    """The blob after the record's header is msgpack, not UTF-8: the ttr still reads (it was
    read as the 60 s default, so a killed worker's leases held the limit for a minute)."""
    rec = b"s|0|1700000000000|1700000000000|5000|3|1-0|t|\x92\xa1j\xc4\x06\"hang\""
    assert leasing.ttr_of({b"rec": rec}) == 5000
    assert leasing.ttr_of({"rec": rec.decode("latin-1")}) == 5000


def test_the_lease_flag_is_not_signed_and_an_older_reader_ignores_it() -> None:
    key = b"k" * 32
    base = Receipt(RECEIPT_VERSION, "orders", 1, "t", "a", "1-0", "g", "c", 1, 0, 5000, 0)
    leased = signed(msgspec.structs.replace(base, lease=True), key)
    assert leased.tag == signed(base, key).tag  # same tag with or without the flag
    assert is_genuine(msgspec.structs.replace(leased, lease=False), key)

    class Older(msgspec.Struct, array_like=True):  # a receipt as the last release reads it
        version: int
        queue: str
        partition: int
        topic: str
        id: str
        entry: str
        group: str
        consumer: str
        attempt: int
        due: int
        ttr_ms: int
        retry_ms: int
        tag: bytes = b""
        keep_ms: int = 0

    older = msgspec.msgpack.decode(msgspec.msgpack.encode(leased), type=Older)
    assert older.tag == leased.tag and older.entry == "1-0"
    assert Entry(1, "t", "1-0", None).leased is False  # the default: no lease in slot 0


def _staged_take(keys: PartitionKeys, acquired: list[int], entries: list[Any],
                 reason: int = GOT_ALL, wait: int = 0) -> tuple[Any, list[Any]]:
    def answer(step: Any) -> Any:
        name = name_of(step)
        if name == "acquireLimit":
            return acquired
        if name == "takeStaged":
            return [entries, reason, wait, b""]
        return []  # nameLeases: every entry leased
    return drive(staging.staged_take_now_plan(keys, "g", "c", "t", 5, True), answer)


def test_a_staged_take_on_partition_1_takes_the_grant_between_the_lease_steps() -> None:
    rows = [[b"1-0", [b"id", b"{k}a", b"rec", REC]]]
    (entries, reason, wait_ms), steps = _staged_take(P1, [2, CONCURRENCY, 40, 1], rows, 3, 900)
    assert [name_of(s) for s in steps] == ["acquireLimit", "takeStaged", "nameLeases"]
    assert [s.keys for s in steps] == [(ZERO.limits,), P1.script_keys(), (ZERO.limits,)]
    assert steps[1].args[3:] == (2, "0")  # at most the grant; the topic limit already held
    assert steps[2].args[2:] == ("1:1-0", 5000)
    assert [e.entry_id for e in entries] == ["1-0"] and entries[0].leased
    assert (reason, wait_ms) == (3, 900)  # the lanes had fewer: their wait, not the limit's


def test_a_staged_take_on_partition_0_holds_the_limit_in_one_call() -> None:
    (entries, reason, _), steps = _staged_take(ZERO, [], [], CONCURRENCY, 40)
    assert [name_of(s) for s in steps] == ["takeStaged"]
    assert steps[0].args[3:] == (5, "1") and (entries, reason) == ([], CONCURRENCY)


def test_a_staged_take_held_by_the_concurrency_waits_on_partition_0s_wake_list() -> None:
    _, steps = drive(staging.staged_wait_plan([P1], "t", CONCURRENCY, 300, 1000),
                     lambda step: None)
    assert steps[0].args[1:] == (ZERO.limit_wake("t"), "0.300")  # one slot: a cluster takes it
    _, steps = drive(staging.staged_wait_plan([ZERO], "t", CONCURRENCY, 300, 1000),
                     lambda step: None)
    assert steps[0].args[1:3] == (ZERO.stage_wake("t"), ZERO.limit_wake("t"))
