"""The prose of ``docs/benchmarks.md``: how to read the tables and what bounds each figure.

Every number and every met / NOT met in this prose comes from the run that writes the report:
the templates below hold no figures, only ``{placeholders}`` filled by ``fill()`` from that run's
figures (``Section.figures``), its judged targets (``targets.issue_targets``) and the code's own
settings (batch sizes, targets). A figure the run did not produce reads "not measured".
Figures from earlier profiling sessions live in ``report_history.HISTORY`` only, each quoted
with its date and run, under a heading that says they are not this run's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from benchmarks import targets
from benchmarks.dispatch import BODY, CALL_BOUND_US
from benchmarks.harness import NOT_MEASURED, Check, measured
from benchmarks.report_history import HISTORY
from streamdelay.consumer.dispatcher import PROMOTE_BATCH
from streamdelay.producer.enqueuing import ENQUEUE_BATCH

ANALYSIS_HEADING = "## What bounds the figures"
HISTORY_HEADING = "## History: earlier runs (not this run)"
PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")

INTRO = """\
**Read these figures as noisy.** This machine has {cores} cores, shared by Redis, the worker \
processes, the producer and often by other people's processes (load average {load} at the \
start of this run), so one run differs from the next and a lateness tail can come from a \
neighbour. The raw Redis ceilings next to each figure come from the same run on the same \
server, so the ratios are the steadier number.

Method: every benchmark starts its own `redis-server` ({redis}, no persistence) on a free \
loopback port; workers are real `python -m streamdelay worker benchmarks.bench_app:worker` \
processes (embedded dispatcher each); lateness = handler start - due, both on the Redis server \
clock (the worker's local clock plus an offset measured against Redis `TIME`; error bound in the \
table). "Never early" is checked twice: handler start >= due, and the stream entry id (stamped by \
`XADD` inside `promoteDue` with the server clock) >= due. "promote" = entry id time - due (the \
dispatcher's share), "pickup" = handler start - entry id time (the reader's share). The \
"Targets" list below judges each target from this run's figures; a target the run produced no \
figure for reads "not measured", and `make bench` then exits non-zero.
"""

NOTES: tuple[str, ...] = (
    """\
**Lateness at {lateness_rate_low} and {lateness_rate_mid} due/s** (p99 <= {target_low} ms: \
{verdict_lateness_200}, p99 {p99_200} ms; <= {target_mid} ms: {verdict_lateness_2000}, p99 \
{p99_2000} ms; one worker process). Of it, "promote" p99 {promote_200} / {promote_2000} ms and \
"pickup" p99 {pickup_200} / {pickup_2000} ms; a Redis round trip (PING) p99 {ping_p99} ms in \
the same run. The dispatcher sleeps to the microsecond until the next due time (`promoteDue` \
returns the server clock in µs; on Linux the wait ends on a `timerfd` registered with the event \
loop, because asyncio's epoll timers wake up late, in whole milliseconds rounded up), so \
"promote" is the dispatcher's wake-up; `XREADGROUP` wake-up and task start make "pickup" \
(both in whole ms of the entry id: \
`benchmarks/lateness_trace.py` splits them to the µs). The tail grows with CPU contention on \
a shared machine: in `benchmarks/lateness_trace.py` the slowest jobs are those during which the \
worker's thread waited for a CPU (kernel `schedstat`, see History). `Worker.run()` calls \
`gc.freeze()` before serving, so collections of start-up objects do not stall the embedded \
dispatcher.""",
    """\
**Lateness at {lateness_rate_high} due/s** (p99 <= {target_high} ms with as many worker \
processes as the machine has cores: {verdict_lateness_20000}, p99 {p99_20000} ms, {steady_20000} \
ms once past the ramp from idle). "Promote" p99 {promote_20000} ms against "pickup" p99 \
{pickup_20000} ms: when "pickup" carries the lateness, the processes do not keep up, the stream \
backlog grows through the run and the lateness with it. Bound: the CPU per job of the Python \
event loops (creating the handler task, parsing the `XREADGROUP` reply, the ack batches) and \
Redis' own, on a machine of {cores} cores that runs both; more cores (or Redis on its \
own host) lift it.""",
    """\
**Single enqueue** (>= {target_single_rate}/s and >= {target_single_ratio} of a raw round trip: \
{verdict_single}, {single_rate}/s, {single_ratio} of {single_raw}/s): the ratio is the median \
of {single_rounds} rounds that alternate with the raw `ZADD` on the queue's own client, so load \
from other processes hits both sides alike. One round trip each, like the raw `ZADD`, but \
{single_us} µs per call against {single_raw_us} µs; Redis CPU {single_redis_us} µs per call \
against {single_raw_redis_us} µs for the `ZADD` (the one-job `enqueueJobV2` script: `TIME`, \
`HSETNX`, `ZADD`, the head check, `HINCRBY`, each write a `pcall` taken back if a later one \
fails, plus the fixed cost of an `EVALSHA` and of each `redis.call`); the rest is the client \
(validation, msgspec encoding; the call goes on a connection held aside, `redis_io/lane.py`, \
without redis-py's pool checkout and its unread-data poll, which the raw `ZADD` still pays; \
against raw `ZADD` round trips on a held connection too, the ratio is {single_held_ratio}). \
{target_single_ratio} of the raw round trip means at most {single_budget_us} µs per call, \
{single_gap_us} µs from this run's figure (a negative gap: met). Under load every round trip \
grows by the same scheduling delays while the fixed CPU costs stay, so the ratio rises with \
the machine's load and is lowest on a quiet machine.""",
    """\
**enqueue_many** (>= {target_many}/s: {verdict_many}, {many_rate}/s, the rates of \
{many_rounds} rounds alternating with the raw pipeline): {many_us} µs of wall time per job, of \
which {many_redis_us} µs is Redis CPU inside `enqueueJobsV2` and the rest Python (building the \
`JobSpec`, validation, msgspec encoding, packing the arguments, reading the replies); every \
job is validated before the first is sent, so validation cannot overlap Redis, while the \
bounded calls leave one by one as they are packed and Redis runs each while the next is packed. \
{target_many}/s means {many_target_us} µs per job all told; Redis alone would cap at \
{many_redis_cap}/s. The raw pipelined `ZADD` ({many_raw}/s) does one command per job and \
writes no record. What the next steps would take is measured under History (the latest \
dated entry on `enqueue_many`).""",
    """\
**AsyncQueue with concurrent callers** (>= {target_async}/s: {verdict_async}, {async_rate}/s \
with {callers} callers, {async_ratio} the raw async `ZADD` of the same callers at \
{async_raw}/s): concurrent calls are coalesced into shared `enqueueJobsV2` calls \
(`coalesce.py`), so the asyncio connection pool is not the bound; one event loop doing the \
validation and encoding (as for `enqueue_many`, {many_us} µs per job in this run) plus the \
Redis time ({async_redis_us} µs per job) is.""",
    """\
**Dispatch alone** (>= {target_dispatch}/s: {verdict_dispatch}, {dispatch_rate}/s): \
{dispatch_redis_us} µs of Redis CPU per promoted job inside `promoteDueV2`: one `XADD` per job \
(a stream entry cannot be added in bulk), the record rewritten with its new state and entry id \
(one `HSET` per batch; on the current layout only the record's header, the body staying in \
the stream entry), `HMGET`s in growing steps and one `ZREMRANGEBYRANK` per batch of \
{promote_batch} (the batch is the head of the delayed set). Of these the `XADD` is the \
largest part (History below); Redis alone would cap at {dispatch_redis_cap}/s. \
{target_dispatch}/s would be {dispatch_target_us} µs per job including the client, whose share \
is one round trip per batch, sent on a connection held aside for the dispatcher \
(`redis_io/lane.py`). The raw pipelined `XADD` of the same entries from redis-py: \
{dispatch_raw}/s in this run (the script avoids the client's per-command packing).""",
    """\
**Dispatch cost over the backlog** (within {flat_max}x: {verdict_flat}; Redis CPU \
{backlog_cpu_small} -> {backlog_cpu_large} µs per promoted job, {backlog_cpu_ratio}x, from a \
{backlog_small} to a {backlog_large} backlog): the head read (`ZRANGEBYSCORE ... LIMIT`) is \
O(log N) and every other command takes constant time per job, but Redis' dicts double at \
each power of two and rehash incrementally, and until a rehash is done every lookup probes two \
tables (`benchmarks/backlog_ramp.py` shows it with `DEBUG HTSTATS-KEY`, and measures again \
once it has driven the rehash to its end: History below). A big hash is rehashed only by the \
commands that touch it (Redis' background rehashing covers the keyspace, not a hash's own \
table), so after crossing a power of two the cost stays higher until that many lookups have \
passed; with the rehash done, what is left is the memory: the same few lookups per job in a \
working set of gigabytes miss the CPU caches more often.""",
    """\
**Bounded script calls** ({verdict_calls}; bound applied: median call <= {call_bound_us} µs): \
median `promoteDueV2` call ({promote_batch} jobs) {call_promote_us} µs, median `enqueueJobsV2` \
call ({enqueue_batch} jobs) {call_enqueue_us} µs (SLOWLOG of the dispatch-alone run). \
`dispatcher.PROMOTE_BATCH` and `enqueuing.ENQUEUE_BATCH` set these sizes; a larger batch promotes \
faster per job but blocks Redis longer per call. On a loaded machine a call's wall time includes \
being descheduled, so the median grows with the load.""",
    """\
**Drain** (>= {target_drain}/s with one process: {verdict_drain_10000}, {drain_one}/s; \
{drain_raw}/s for the raw single-process `XREADGROUP`+`XACK`+`XDEL` consumer of the same run): \
per job the worker creates a task, parses the `XREADGROUP` reply (redis-py), decodes the record \
and blob (msgspec), runs the handler under `handler_timeout` and batches the ack (one `XACK` and \
one `XDEL` per topic and one `HMGET` and `HDEL` per batch inside `ackJobsV2`); hiredis (the \
`streamdelay[hiredis]` extra) parses the replies and packs the commands. \
**{target_drain_jobs_big} due jobs** (>= {target_drain}/s with one process: \
{verdict_drain_100000}, {drain_100k_one}/s); the curve over worker processes: {drain_curve}. \
**Scaling with two processes** \
(>= {scaling}x: {verdict_scaling_10000} with {target_drain_jobs_small} jobs ({drain_two}/s, \
{drain_scaling}x), {verdict_scaling_100000} with {target_drain_jobs_big} jobs \
({drain_100k_scaling}x)): Redis needs \
{drain_redis_us} µs of CPU per job, i.e. {drain_redis_cores} of a core at the one-process \
rate, on a machine of {cores} cores that also runs the worker processes; a second process gains \
only the CPU left over, and so does each further one. Bound: cores (worker processes and \
Redis); the curve rises while cores are free.""",
    """\
**Memory per delayed job** (<= {target_memory} B with the benchmark's body of {body_bytes} B of \
JSON: {verdict_memory}, \
{memory_per_job} B): the record ({record_bytes} B: text header and MessagePack blob) in one \
hash field plus one sorted-set member (skiplist node, dict entry, member sds). The raw floor, a \
bare `ZADD` + `HSET` of the same record from redis-py, costs {memory_raw_floor} B in this run, \
{memory_overhead} B from ours: Redis' own per-entry cost is the bulk. A sorted-set member and \
a hash field cost nearly {target_memory} B between them before the record's first byte (measured \
under History), so no record format reaches it: it needs one entry per job instead of two, i.e. \
dropping the id index that gives `get`, `cancel`, `reschedule` and the dedupe by id a \
constant-time lookup, or Redis encodings other than the defaults.""",
    """\
**Memory after the drain** ({verdict_memory_back}, {memory_left} B vs the baseline after a \
backlog that took {memory_grew} MB): acknowledged jobs are `XACK`ed and `XDEL`eted and their \
record deleted (no tombstone unless `keep_done`), so `used_memory` returns to the baseline; \
what is left is the empty stream's and the group's own structures.""",
)



def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if measured(value) else NOT_MEASURED


def _per_call_us(per_second: float) -> float:
    return 1e6 / per_second if measured(per_second) and per_second > 0 else math.nan


def drain_curve(figures: Mapping[str, float]) -> str:
    """The 100k drain's jobs/s for each worker-process count the run measured."""
    counts = sorted(int(key.split("_")[2][:-1]) for key in figures
                    if key.startswith("drain_100000_") and key.endswith("p"))
    if not counts:
        return NOT_MEASURED
    return ", ".join(f"{n} process{'es' if n > 1 else ''} {figures[f'drain_100000_{n}p']:,.0f}/s"
                     for n in counts)


def fill_values(figures: Mapping[str, float], checks: Mapping[str, Check],
                info: Mapping[str, str]) -> dict[str, str]:
    """Every placeholder's text, from this run's figures, judged targets and the code."""
    def g(name: str) -> float:
        return targets.get(figures, name)

    single, single_raw = g("enqueue_single"), g("enqueue_single_raw")
    many, many_redis = g("enqueue_many"), g("enqueue_many_redis_us")
    one, two = g("drain_10000_1p"), g("drain_10000_2p")
    drain_redis = g("drain_10000_1p_redis_us")
    values = {
        "cores": _fmt(g("cores"), ".0f"), "load": _fmt(g("load_1m"), ".2f"),
        "redis": info.get("redis", NOT_MEASURED),
        "lateness_rate_low": "200", "lateness_rate_mid": "2,000", "lateness_rate_high": "20,000",
        "target_low": f"{targets.LATENESS_P99_MS[200]:g}",
        "target_mid": f"{targets.LATENESS_P99_MS[2000]:g}",
        "target_high": f"{targets.LATENESS_P99_MS[20000]:g}",
        "ping_p99": _fmt(g("ping_p99"), ".2f"),
        "target_single_rate": f"{targets.SINGLE_MIN:,}",
        "target_single_ratio": f"{targets.SINGLE_RATIO_MIN:.0%}",
        "single_rate": _fmt(single, ",.0f"), "single_raw": _fmt(single_raw, ",.0f"),
        "single_ratio": _fmt(g("enqueue_single_ratio") * 100, ".0f") + " %",
        "single_held_ratio": _fmt(g("enqueue_single_held_ratio") * 100, ".0f") + " %",
        "single_us": _fmt(_per_call_us(single), ".0f"),
        "single_raw_us": _fmt(_per_call_us(single_raw), ".0f"),
        "single_redis_us": _fmt(g("enqueue_single_redis_us"), ".1f"),
        "single_raw_redis_us": _fmt(g("enqueue_single_raw_redis_us"), ".1f"),
        "single_rounds": _fmt(g("enqueue_single_rounds"), ".0f"),
        "many_rounds": _fmt(g("enqueue_many_rounds"), ".0f"),
        "single_budget_us": _fmt(_per_call_us(single_raw * targets.SINGLE_RATIO_MIN), ".0f"),
        "single_gap_us": _fmt(_per_call_us(single)
                              - _per_call_us(single_raw * targets.SINGLE_RATIO_MIN), ".0f"),
        "target_many": f"{targets.MANY_MIN:,}", "many_rate": _fmt(many, ",.0f"),
        "many_us": _fmt(_per_call_us(many), ".1f"), "many_redis_us": _fmt(many_redis, ".1f"),
        "many_target_us": f"{1e6 / targets.MANY_MIN:g}",
        "many_redis_cap": _fmt(_per_call_us(many_redis), ",.0f"),
        "many_raw": _fmt(g("enqueue_many_raw"), ",.0f"),
        "target_async": f"{targets.ASYNC_MIN:,}", "async_rate": _fmt(g("enqueue_async"), ",.0f"),
        "callers": _fmt(g("enqueue_callers"), ".0f"),
        "async_ratio": _fmt(targets.ratio(g("enqueue_async"), g("enqueue_async_raw")), ".2f")
        + "x", "async_raw": _fmt(g("enqueue_async_raw"), ",.0f"),
        "async_redis_us": _fmt(g("enqueue_async_redis_us"), ".1f"),
        "target_dispatch": f"{targets.DISPATCH_MIN:,}",
        "dispatch_rate": _fmt(g("dispatch_alone"), ",.0f"),
        "dispatch_redis_us": _fmt(g("dispatch_alone_redis_us"), ".1f"),
        "dispatch_redis_cap": _fmt(_per_call_us(g("dispatch_alone_redis_us")), ",.0f"),
        "dispatch_target_us": f"{1e6 / targets.DISPATCH_MIN:g}",
        "dispatch_raw": _fmt(g("dispatch_alone_raw"), ",.0f"),
        "promote_batch": f"{PROMOTE_BATCH}", "enqueue_batch": f"{ENQUEUE_BATCH}",
        "flat_max": f"{targets.FLAT_MAX:g}",
        "backlog_cpu_small": _fmt(g("backlog_cpu_small"), ".1f"),
        "backlog_cpu_large": _fmt(g("backlog_cpu_large"), ".1f"),
        "backlog_cpu_ratio": _fmt(targets.ratio(g("backlog_cpu_large"), g("backlog_cpu_small")),
                                  ".2f"),
        "backlog_small": _fmt(g("backlog_small"), ",.0f"),
        "backlog_large": _fmt(g("backlog_large"), ",.0f"),
        "call_bound_us": f"{CALL_BOUND_US:,}",
        "call_promote_us": _fmt(g("call_median_us_promoteDueV2"), ",.0f"),
        "call_enqueue_us": _fmt(g("call_median_us_enqueueJobsV2"), ",.0f"),
        "target_drain": f"{targets.DRAIN_MIN:,}", "drain_one": _fmt(one, ",.0f"),
        "drain_two": _fmt(two, ",.0f"), "drain_raw": _fmt(g("drain_10000_raw"), ",.0f"),
        "drain_scaling": _fmt(targets.ratio(two, one), ".2f"), "scaling": f"{targets.SCALING:g}",
        "drain_redis_us": _fmt(drain_redis, ".1f"),
        "drain_100k_one": _fmt(g("drain_100000_1p"), ",.0f"),
        "drain_100k_scaling": _fmt(targets.ratio(g("drain_100000_2p"), g("drain_100000_1p")),
                                   ".2f"),
        "drain_curve": drain_curve(figures),
        "target_drain_jobs_small": "10,000", "target_drain_jobs_big": "100,000",
        "drain_redis_cores": _fmt(drain_redis * one / 1e6, ".2f"),
        "target_memory": f"{targets.MEMORY_MAX_B}", "body_bytes": f"{len(json.dumps(BODY))}",
        "memory_per_job": _fmt(g("memory_per_job"), ".0f"),
        "record_bytes": _fmt(g("record_bytes"), ".0f"),
        "memory_raw_floor": _fmt(g("memory_raw_floor"), ".0f"),
        "memory_overhead": _fmt(g("memory_per_job") - g("memory_raw_floor"), "+.0f"),
        "memory_left": _fmt(g("memory_left"), "+,.0f"),
        "memory_grew": _fmt(g("memory_grew") / 1e6, ".1f"),
    }
    for rate in targets.LATENESS_P99_MS:
        values[f"p99_{rate}"] = _fmt(g(f"lateness_p99_{rate}"), ".2f")
        values[f"steady_{rate}"] = _fmt(g(f"steady_p99_{rate}"), ".2f")
        values[f"promote_{rate}"] = _fmt(g(f"promote_p99_{rate}"), ".2f")
        values[f"pickup_{rate}"] = _fmt(g(f"pickup_p99_{rate}"), ".2f")
    for key, check in checks.items():
        values[f"verdict_{key}"] = f"**{check.state}**"
    values.setdefault("verdict_calls", f"**{NOT_MEASURED}**")
    return values


def fill(template: str, values: Mapping[str, str]) -> str:
    """The template with every placeholder replaced; one this run has no value for reads
    "not measured"."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), NOT_MEASURED), template)


def intro(values: Mapping[str, str]) -> str:
    """How to read the report, with this run's machine and load."""
    return fill(INTRO, values)


def analysis(values: Mapping[str, str]) -> str:
    """"What bounds the figures": one bullet per target, every figure and verdict this run's."""
    bullets = "\n".join(f"- {fill(note, values)}" for note in NOTES)
    return (f"{ANALYSIS_HEADING}\n\nEvery figure and verdict below comes from the tables of this "
            "run; profiles from earlier runs are quoted, with their dates, under "
            f"[History](#history-earlier-runs-not-this-run).\n\n{bullets}\n")


def history(peers: str) -> str:
    """The dated figures of earlier runs: the profiles, and the peers section of the last
    ``make bench-full`` (it carries its own date)."""
    return f"{HISTORY_HEADING}\n\n{HISTORY}\n{peers}"
