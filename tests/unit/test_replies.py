"""The fast layer: plans driven against stub replies, reply parsers, the Lua include resolver and
the error-code table, all without Redis (milliseconds). Each stub reply has the shape the
script's header in lua/ documents; the real-server suites check that Redis answers so.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import streamdelay as sd
from streamdelay.client import call_plans as plans
from streamdelay.client.enqueuing import (
    ENQUEUE_BATCH,
    PreparedJob,
    enqueue_plan,
    prepare_job,
    round_plan,
)
from streamdelay.consume.core.constants import REQUEUE_BATCH
from streamdelay.consume.core.upkeep_plans import claim_plan
from streamdelay.io.config import QueueConfig
from streamdelay.protocol import scripts as scripts_module
from streamdelay.protocol.batching import by_partition, partition_batches
from streamdelay.protocol.keys import partition_of
from streamdelay.protocol.layouts import migrate_plan
from streamdelay.protocol.partitions import partition_check_plan
from streamdelay.protocol.plan import Command, Commands, EachCall, Plan, Step
from streamdelay.protocol.replies import (
    RescheduleReply,
    parse_enqueue,
    parse_job,
    parse_promote,
    parse_requeue,
    parse_reschedule,
    parse_stats,
    text,
)
from streamdelay.protocol.script_errors import SCRIPT_ERRORS, error_from_script
from streamdelay.protocol.scripts import ScriptCall, lua_dir

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
CFG = QueueConfig("orders", "redis://127.0.0.1:1/0")


def drive(plan: Plan[T], answer: Callable[[Step], Any]) -> tuple[T, list[Step]]:
    """Run a plan to its end, answering each step with ``answer(step)``; also the steps seen."""
    seen: list[Step] = []
    try:
        step = next(plan)
        while True:
            seen.append(step)
            reply = answer(step)  # an error is raised inside the plan, as the runner does
            step = plan.throw(reply) if isinstance(reply, Exception) else plan.send(reply)
    except StopIteration as done:
        return done.value, seen


def name_of(step: Step) -> str:
    """The script name or command word of a single step."""
    assert isinstance(step, ScriptCall | Command), step
    return step.script.name if isinstance(step, ScriptCall) else str(step.args[0])


# --- reply parsers ---------------------------------------------------------------------------

def test_promote_reply_fields_by_name_and_foreign_ids_decoded_leniently() -> None:
    reply = [3, 1_700_000_001_000, 1_700_000_000_500, [[b"j\xff1", b"no record"]],
             1_700_000_000_500_123]
    parsed = parse_promote(reply)
    assert (parsed.moved, parsed.next_due_ms, parsed.now_ms, parsed.now_us) == (
        3, 1_700_000_001_000, 1_700_000_000_500, 1_700_000_000_500_123)
    assert parsed.dropped == [("j\ufffd1", "no record")]


def test_stats_reply_rows_by_name() -> None:
    reply = [1000, 900, b"mail", [b"mail", 2, 5, 1, 3, 800, b"workers"],
             [b"sms", 0, 0, 0, 0, -1, b""]]
    parsed = parse_stats(reply)
    assert (parsed.now_ms, parsed.head_due_ms, parsed.head_topic) == (1000, 900, "mail")
    mail, sms = parsed.rows
    assert (mail.topic, mail.delayed, mail.in_stream, mail.reserved, mail.dead,
            mail.oldest_due_ms, mail.group) == ("mail", 2, 5, 1, 3, 800, "workers")
    assert (sms.oldest_due_ms, sms.group) == (-1, "")


def test_requeue_job_and_enqueue_replies() -> None:
    walk = parse_requeue([b"1-5", [b"a"], [b"b", b"c"], 2])
    assert (walk.cursor, walk.moved, walk.dead, walk.cleaned, walk.done) == (
        "1-5", ["a"], ["b", "c"], 2, False)
    assert parse_requeue([b"0-0", [], [], 0]).done
    assert parse_job(None) is None
    job = parse_job([b"rec", b"reserved", b"w1", 40, 2, b"", 1000])
    assert job is not None and (job.substate, job.owner, job.idle_ms, job.deliveries) == (
        "reserved", "w1", 40, 2)
    rows = parse_enqueue([500, b"x:400", b"?:0", b"d:700"])
    assert [(r.created, r.due_ms, r.state) for r in rows] == [
        (True, 500, "delayed"), (False, 400, "dead"), (False, 0, "corrupt"),
        (False, 700, "delayed")]
    assert text(b"caf\xc3\xa9") == "café" and text(7) == "7"
    assert parse_reschedule([1, 1234]) == RescheduleReply(True, 1234)
    assert parse_reschedule([0]) == RescheduleReply(False, None)


# --- plans against stub replies --------------------------------------------------------------

def test_stats_plan_sums_partitions_and_takes_lag_from_the_delayed_head() -> None:
    cfg = QueueConfig("orders", "redis://127.0.0.1:1/0", partitions=2)
    replies = [[1000, 900, b"mail", [b"mail", 1, 2, 1, 0, -1, b"workers"]],
               [1010, -1, b"", [b"mail", 3, 1, 0, 1, 700, b"workers"]]]
    paused = [b"sms", b"990"]  # HGETALL of the paused topics: sms, not yet seen by any job
    limits = [b"mail", b"50|1000|3"]  # HGETALL of the limits: mail, 50/s and 3 at once

    hashes = {"paused": paused, "limits": limits, "keylimits": [b"mail", b"||2"],
              "staged": [b"mail", b"1"], "ready": [b"mail", b"5"],
              "waiting": [b"mail", b"1", b"sms", b"0"]}

    def one(args: tuple[Any, ...]) -> Any:
        if args[0] == "HGETALL":
            return hashes[args[1].rsplit(":", 1)[1]]
        return {"ZCARD": 2, "ZREVRANGE": [b"tenant-1", b"3", b"", b"2"]}[args[0]]

    def answer(step: Step) -> Any:
        if isinstance(step, list):
            return replies
        if isinstance(step, Commands):
            return [one(c.args) for c in step.commands]
        return one(step.args)  # type: ignore[union-attr]

    stats, steps = drive(plans.stats_plan(cfg), answer)
    assert len(steps) == 7 and isinstance(steps[0], list) and len(steps[0]) == 2
    assert [name_of(s) if not isinstance(s, Commands) else "pipeline" for s in steps[1:]] == [
        "pipeline", "HGETALL", "pipeline", "ZCARD", "pipeline", "pipeline"]
    assert isinstance(steps[1], Commands) and len(steps[1].commands) == 2  # waiting (workflows)
    assert stats.topics["mail"].waiting == 2 and stats.topics["sms"].waiting == 0
    staged = stats.topics["mail"]  # 5 ready in the lanes of each partition, top keys summed
    assert (staged.staged, staged.ready, staged.keys, staged.key_concurrency) == (
        True, 2 + 10, (("tenant-1", 6), ("", 4)), 2)
    stats = dataclasses.replace(stats, topics={**stats.topics, "mail": dataclasses.replace(
        staged, ready=2)})
    assert (stats.topics["mail"].rate, stats.topics["mail"].concurrency,
            stats.topics["mail"].leases) == ("50/s", 3, 2)
    mail = stats.topics["mail"]
    assert (stats.now, mail.delayed, mail.ready, mail.reserved, mail.dead, mail.group) == (
        1010, 4, 2, 1, 1, "workers")
    assert mail.lag_ms == 1010 - 700 and not mail.paused
    assert stats.topics["sms"].paused and stats.topics["sms"].delayed == 0


def test_claim_plan_walks_the_pending_list_to_its_end_then_prunes() -> None:
    cursors = iter([[b"5-0", [b"a"], [], 1], [b"0-0", [b"b"], [b"c"], 0]])

    def answer(step: Step) -> Any:
        return {"HGETALL": [b"mail", b"workers"], "requeueStuck": None,
                "pruneConsumers": [b"gone-1"]}[name_of(step)] or next(cursors)

    result, steps = drive(claim_plan(CFG.name, CFG.partitions, "workers", None, None, None), answer)
    assert (result.moved, result.dead, result.cleaned, result.removed) == (
        ["a", "b"], ["c"], 1, ["gone-1"])
    walks = [s for s in steps if name_of(s) == "requeueStuck"]
    assert [w.args[2] for w in walks if isinstance(w, ScriptCall)] == ["-", "5-0"]
    assert all(isinstance(w, ScriptCall) and w.args[3:] == (REQUEUE_BATCH, -1, "")
               for w in walks)


def test_claim_plan_refuses_a_group_that_serves_nothing() -> None:
    with pytest.raises(sd.GroupNotFound, match="group"):
        drive(claim_plan(CFG.name, CFG.partitions, "nobody", None, None, None), lambda step: [])


def test_get_plan_reads_a_reserved_job() -> None:
    from streamdelay.protocol.codec import encode_blob, encode_body

    fmt, body = encode_body({"n": 1}, "json", 1024)
    record = b"s|1|100|90|30000|5|7-0|mail|" + encode_blob(fmt, body, {}, None)
    replies = {"getJob": [record, b"reserved", b"w1", 12, 1, b"", 1000, b""],
               "GET": b"7-0|42"}  # the progress of this delivery (entry 7-0)
    # its parents and its waiters (workflows), one pipeline
    relations = [[b"~", b"d|r|0|0", b"p1", b"s"], [b"0|kid", b"1|#b7"]]

    def answer(step: Step) -> Any:
        return relations if isinstance(step, Commands) else replies[name_of(step)]

    info, steps = drive(plans.get_plan(CFG, "job-1"), answer)
    assert [name_of_any(s) for s in steps] == ["getJob", "HGETALL", "GET"]
    assert info is not None and info.parents == {"p1": "succeeded"}
    assert info.children == ["batch:b7", "kid"]
    relations = [[], []]
    assert info is not None and (info.state, info.consumer, info.idle_ms, info.body,
                                 info.progress) == ("reserved", "w1", 12, {"n": 1}, 42)
    replies["GET"] = b"6-0|41"  # an earlier delivery's progress is not this one's
    earlier, _ = drive(plans.get_plan(CFG, "job-1"), answer)
    assert earlier is not None and earlier.parents is None and earlier.children is None
    assert earlier is not None and earlier.progress is None
    missing, _ = drive(plans.get_plan(CFG, "job-1"), lambda step: None)
    assert missing is None


def test_enqueue_plan_cuts_calls_by_partition_and_batch_size() -> None:
    cfg = QueueConfig("orders", "redis://127.0.0.1:1/0", partitions=2)
    specs = [sd.JobSpec("mail", {"i": i}, id=f"job-{i}") for i in range(ENQUEUE_BATCH + 50)]

    results, steps = drive(enqueue_plan(cfg, specs), _rows)
    assert [r.id for r in results] == [s.id for s in specs] and all(r.created for r in results)
    (round_trip,) = steps
    assert isinstance(round_trip, EachCall)  # several calls, one round trip
    per_partition = by_partition(specs, lambda s: partition_of(str(s.id), 2))
    assert len(round_trip.calls) == sum(-(-len(v) // ENQUEUE_BATCH)
                                        for v in per_partition.values())
    assert all(_count(c) <= ENQUEUE_BATCH for c in round_trip.calls)
    assert sum(_count(c) for c in round_trip.calls) == len(specs)


def _jobs(cfg: QueueConfig, *specs: sd.JobSpec) -> list[PreparedJob]:
    return [prepare_job(cfg, spec) for spec in specs]


def _count(call: Any) -> int:
    """The jobs of an ``enqueueJobs`` call: 3 values each after 7 with the shared values (flag
    ``2``), else 8 (flag ``0``) or 9 (flag ``1``) each after 3."""
    if call.args[2] == "2":
        return (len(call.args) - 7) // 3
    return (len(call.args) - 3) // (9 if call.args[2] == "1" else 8)


def _rows(step: Step) -> Any:
    """A stub ``enqueueJobs`` reply (every job created) for a call, a pipeline or an EachCall."""
    calls = step.calls if isinstance(step, EachCall) else step if isinstance(step, list) else [step]
    rows = [[5 for _ in range(_count(c))] for c in calls]
    return rows if isinstance(step, list | EachCall) else rows[0]


def test_a_round_of_several_calls_checks_past_times_first_and_isolates_the_refused_job() -> None:
    cfg = QueueConfig("orders", "redis://127.0.0.1:1/0", partitions=4)
    specs = [sd.JobSpec("mail", i, id=f"j{i}") for i in range(8)]
    jobs = _jobs(cfg, *specs, sd.JobSpec("mail", "old", id="old", at=1.0))
    outcomes: list[Any] = [None] * len(jobs)
    server_now = [b"1700000000", b"0"]
    _, steps = drive(round_plan(cfg, jobs, outcomes, isolate=True),
                     lambda step: server_now if name_of_any(step) == "TIME" else _rows(step))
    assert name_of_any(steps[0]) == "TIME"
    assert isinstance(outcomes[-1], sd.ValidationError) and outcomes[-1].field == "at"
    assert all(isinstance(o, sd.EnqueueResult) for o in outcomes[:-1])
    assert isinstance(steps[1], EachCall)
    assert "old" not in {a for c in steps[1].calls for a in c.args}  # the refused job stays out
    with pytest.raises(sd.ValidationError, match="at:"):  # enqueue_many: all or nothing
        drive(round_plan(cfg, jobs, [None] * len(jobs), isolate=False),
              lambda step: server_now if name_of_any(step) == "TIME" else _rows(step))


def test_a_single_call_refused_for_one_job_goes_again_without_it() -> None:
    jobs = _jobs(CFG, sd.JobSpec("mail", 1, id="a"), sd.JobSpec("mail", 2, id="b", at=1.0))
    answers = iter([error_from_script("enqueueJobs", "SDERR AT_IN_PAST b"), [5]])
    outcomes: list[Any] = [None, None]
    _, steps = drive(round_plan(CFG, jobs, outcomes, isolate=True), lambda step: next(answers))
    assert len(steps) == 2 and isinstance(outcomes[0], sd.EnqueueResult)
    assert isinstance(outcomes[1], sd.ValidationError)
    assert "b" not in steps[1].args  # type: ignore[union-attr]


def name_of_any(step: Step) -> str:
    """``name_of`` for a pipeline too (its first call or command)."""
    return name_of(step.calls[0] if isinstance(step, EachCall)
                   else step.commands[0] if isinstance(step, Commands)
                   else step[0] if isinstance(step, list) else step)


def test_partition_check_refuses_another_count_naming_partitions() -> None:
    answers = iter([[None, None], 0, b"4"])  # HMGET: none; HSETNX: another was first; HGET
    with pytest.raises(sd.ConfigError, match="partitions=4") as refused:
        drive(partition_check_plan("orders", 2), lambda step: next(answers))
    assert refused.value.field == "partitions"
    done, steps = drive(partition_check_plan("orders", 2),
                        lambda step: [None, None] if name_of(step) == "HMGET" else 1)
    # the creator sets the layout every release reads (docs/keys.md#layouts)
    assert done is None and [name_of(s) for s in steps] == ["HMGET", "HSETNX", "HSETNX"] * 2
    assert [s.args[1:] for s in steps if name_of(s) == "HSETNX"][1::2] == [  # type: ignore[union-attr]
        ("sd:{orders#0}:meta", "layout", 1), ("sd:{orders#1}:meta", "layout", 1)]
    _, steps = drive(partition_check_plan("orders", 2), lambda step: [b"2", b"2"])
    assert [name_of(s) for s in steps] == ["HMGET", "HMGET"]  # an agreed queue costs no write


def test_partition_check_of_a_read_only_command_writes_nothing_and_names_a_missing_queue(
) -> None:
    with pytest.raises(sd.NoSuchQueue, match="no such queue"):
        drive(partition_check_plan("orders", 2, create=False),
              lambda step: [None, None] if name_of(step) == "HMGET" else 0)


@pytest.mark.parametrize("create", [True, False])
def test_a_layout_this_release_does_not_know_is_refused_before_anything_is_written(
        create: bool) -> None:
    for found in (b"3", b"two", b"0"):
        with pytest.raises(sd.LayoutError, match="cannot read") as refused:
            drive(partition_check_plan("orders", 1, create),
                  lambda step, found=found: [b"1", found])  # type: ignore[misc]
        assert refused.value.field == "layout" and "sd:{orders#0}:meta" in str(refused.value)
    for known in (None, b"1", b"2"):
        done, steps = drive(partition_check_plan("orders", 1, create),
                            lambda step, known=known: [b"1", known])  # type: ignore[misc]
        assert done is None and [name_of(s) for s in steps] == ["HMGET"]


def test_migrate_names_every_live_process_that_cannot_read_layout_2() -> None:
    def answer(step: Step) -> Any:
        if isinstance(step, Commands):
            return [[b"fast"], [b"fast", b"slow"]]  # HKEYS groups, HKEYS counts
        args = step.args  # type: ignore[union-attr]
        if args[0] == "TIME":
            return [b"1000", b"0"]  # now = 1000 s
        if args[0] == "HGETALL":  # fleet: a live member, an expired one, one that reads less
            return {b"new-1": b"2|1000500", b"gone": b"2|999000", b"future": b"1|1000500"}
        if args[0] == "HGET":
            return None  # layout 1
        if args[0] == "TYPE":
            return b"stream" if args[1].endswith(":t:fast") else b"none"
        if args[1] == "GROUPS":
            return [{b"name": b"workers"}]
        return [[b"name", b"new-1", b"pending", 0, b"idle", 5],  # a RESP2 flat row
                {b"name": b"old", b"pending": 2, b"idle": 300},  # an older release, live
                {b"name": b"gone", b"pending": 0, b"idle": 70000}]  # silent past the window
    with pytest.raises(sd.LayoutError) as refused:
        drive(migrate_plan("orders", 1), answer)
    message = str(refused.value)
    assert "'old'" in message and "'future'" in message and "'new-1'" not in message
    assert "'gone'" not in message and refused.value.field == "layout"
    with pytest.raises(sd.ValidationError, match="seen_within"):
        drive(migrate_plan("orders", 1, -1.0), answer)


def test_batching_keeps_order_within_a_partition_and_bounds_each_batch() -> None:
    items = list(range(25))
    cut = list(partition_batches(items, lambda i: i % 3, 4))
    assert [p for p, _ in cut] == sorted(p for p, _ in cut)
    assert all(len(batch) <= 4 for _, batch in cut)
    assert [i for p, batch in cut if p == 1 for i in batch] == [i for i in items if i % 3 == 1]
    heavy = list(partition_batches([5, 5, 30, 1, 1], lambda i: 0, 10, lambda i: i, 10))
    assert [list(b) for _, b in heavy] == [[5, 5], [30], [1, 1]]  # a heavy item goes alone


# --- Lua: includes and error codes -----------------------------------------------------------

def _write(directory: Path, files: dict[str, str]) -> None:
    (directory / "includes").mkdir()
    for name, body in files.items():
        (directory / name).write_text(body)


def test_includes_resolve_transitively_once_each_in_any_order(tmp_path: Path) -> None:
    _write(tmp_path, {
        "useBoth-0.lua": "-- useBoth-0\n-- @include b\n-- @include a\nreturn b()\n",
        "includes/a.lua": "-- a()\nlocal function a() return 1 end\n",
        "includes/b.lua": "-- b()\n-- @include a\nlocal function b() return a() end\n",
    })
    source = scripts_module._assemble(tmp_path / "useBoth-0.lua", tmp_path / "includes")
    assert source.count("local function a()") == 1
    assert source.index("local function a()") < source.index("local function b()")
    assert source.count("@include") == 1  # b's line for a, inlined before: kept as a comment


def test_an_include_cycle_or_a_missing_include_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, {
        "loop-0.lua": "-- @include a\n",
        "gap-0.lua": "-- @include nothere\n",
        "includes/a.lua": "-- @include b\n",
        "includes/b.lua": "-- @include a\n",
    })
    with pytest.raises(sd.ConfigError, match="include cycle loop-0 -> a -> b -> a"):
        scripts_module._assemble(tmp_path / "loop-0.lua", tmp_path / "includes")
    with pytest.raises(sd.ConfigError, match="'nothere'"):
        scripts_module._assemble(tmp_path / "gap-0.lua", tmp_path / "includes")


INCLUDE_LINE = re.compile(r"^-- @include ([a-z_]+)\s*$", re.MULTILINE)


def _provides() -> dict[str, set[str]]:
    """What each include defines (its local functions and constants)."""
    found: dict[str, set[str]] = {}
    for path in (lua_dir() / "includes").glob("*.lua"):
        names = set(re.findall(r"^local function ([a-z_]+)\(", path.read_text(), re.MULTILINE))
        names |= {n.strip() for line in re.findall(r"^local ([A-Z_, ]+) =", path.read_text(),
                                                    re.MULTILINE) for n in line.split(",")}
        found[path.stem] = names
    return found


def _closure(name: str, direct: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(direct[name])
    while todo:
        item = todo.pop()
        if item not in seen:
            seen.add(item)
            todo.extend(direct.get(item, ()))
    return seen


def test_every_include_header_names_its_function_and_every_use_is_included() -> None:
    provides = _provides()
    files = {p.stem: p.read_text() for p in lua_dir().glob("*.lua")}
    files |= {p.stem: p.read_text() for p in (lua_dir() / "includes").glob("*.lua")}
    direct = {name: set(INCLUDE_LINE.findall(body)) for name, body in files.items()}
    for name, body in files.items():
        # keys (the key layout), hold (held jobs, docs/guarantees.md#never-twice-at-once),
        # expired (job deadlines, docs/expiry.md), staging and key_limits (staged topics,
        # docs/priorities.md) and flow (workflows, docs/workflows.md) are several helpers of
        # one mechanism, described by their header as a whole
        if name in provides and name not in ("keys", "hold", "expired", "staging", "key_limits",
                                             "flow"):
            signature = re.search(rf"^local function {name}\(([^)]*)\)", body, re.MULTILINE)
            assert signature, f"include {name} defines no function {name}"
            assert body.startswith(f"-- {name}({signature.group(1)})"), (
                f"include {name}: its header does not start with its signature")
        code = "\n".join(line for line in body.splitlines() if not line.startswith("--"))
        for include, names in provides.items():
            if include != name and any(re.search(rf"\b{n}\b", code) for n in names):
                assert include in _closure(name, direct), f"{name} uses {include} without it"


def test_every_script_lists_all_its_includes_each_after_the_ones_it_needs() -> None:
    """A one-level assembler (docs/examples/foreign_producer.py, any language) works too."""
    includes = {p.stem: INCLUDE_LINE.findall(p.read_text())
                for p in (lua_dir() / "includes").glob("*.lua")}
    for path in lua_dir().glob("*.lua"):
        listed = INCLUDE_LINE.findall(path.read_text())
        for position, name in enumerate(listed):
            missing = [dep for dep in includes[name] if dep not in listed[:position]]
            assert not missing, f"{path.name}: list {missing} before {name}"


def test_error_codes_are_listed_once_and_scripts_and_docs_follow_the_list() -> None:
    lua_codes = set(re.findall(r"'SDERR ([A-Z_]+)", "".join(
        p.read_text() for p in [*lua_dir().glob("*.lua"), *lua_dir().glob("includes/*.lua")])))
    keys_doc = (ROOT / "docs" / "keys.md").read_text()
    table = keys_doc.split("## Error codes", 1)[1].split("\n## ", 1)[0]
    doc_codes = set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.MULTILINE))
    assert lua_codes == set(SCRIPT_ERRORS) == doc_codes
    assert isinstance(error_from_script("enqueueJobs", "SDERR AT_IN_PAST j1"), sd.ValidationError)
    assert isinstance(error_from_script("requeueStuck", "SDERR NO_GROUP mail"), sd.GroupNotFound)
    taken = error_from_script("registerGroup", "SDERR GROUP_TAKEN mail others")
    assert isinstance(taken, sd.ConfigError) and taken.field == "group"
    assert type(error_from_script("x", "SDERR SOMETHING new")) is sd.ScriptError



def test_the_module_paths_the_docs_name_still_import() -> None:
    from streamdelay.config import mask_url as via_config
    from streamdelay.masking import mask_url
    from streamdelay.scripts import script

    assert via_config is mask_url and script("enqueueJobs").num_keys == 6
