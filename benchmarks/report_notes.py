"""The prose of ``docs/benchmarks.md``: how to read the tables and what bounds each figure.

Every number and every met / NOT met in this prose comes from the run that writes the report:
the templates below hold no figures, only ``{placeholders}`` filled by ``fill()`` from that run's
figures (``Section.figures``), its judged targets (``targets.issue_targets``) and the code's own
settings (batch sizes, targets). A figure the run did not produce reads "not measured".
Figures from earlier profiling sessions live in ``HISTORY`` only, each quoted with its date and
run, under a heading that says they are not this run's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from benchmarks import targets
from benchmarks.dispatch import BODY, CALL_BOUND_US
from benchmarks.harness import NOT_MEASURED, Check, measured
from streamdelay.consumer.dispatcher import PROMOTE_BATCH
from streamdelay.producer.plans import ENQUEUE_BATCH

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
{verdict_single}, {single_rate}/s, {single_ratio} of {single_raw}/s): one round trip each, \
like the raw `ZADD`, but {single_us} µs per call against {single_raw_us} µs; Redis CPU \
{single_redis_us} µs per call (the one-job `enqueueJob` script: `TIME`, three `TYPE` checks, \
`HSETNX`, `ZADD`, `HINCRBY`, the head check, plus the fixed cost of an `EVALSHA` and of each \
`redis.call`, against one command for the raw `ZADD`); the rest is the client (validation, \
msgspec encoding, redis-py packing of the `EVALSHA`). {target_single_ratio} of the raw round \
trip means at most {single_budget_us} µs per call, {single_gap_us} µs less than this run: about \
what the script alone costs over a `ZADD`, so only a producer that writes with plain commands \
(no atomic script, no idempotency by id) could close it.""",
    """\
**enqueue_many** (>= {target_many}/s: {verdict_many}, {many_rate}/s): {many_us} µs of wall time \
per job, of which {many_redis_us} µs is Redis CPU inside `enqueueJobs` and the rest Python \
(validation, msgspec encoding, redis-py packing of the arguments of each job); the two run one \
after the other within a call. {target_many}/s means {many_target_us} µs per job all told; \
Redis alone would cap at {many_redis_cap}/s. The raw pipelined `ZADD` ({many_raw}/s) does one \
command per job and writes no record.""",
    """\
**AsyncQueue with concurrent callers** (>= {target_async}/s: {verdict_async}, {async_rate}/s \
with {callers} callers, {async_ratio} the raw async `ZADD` of the same callers at \
{async_raw}/s): concurrent calls are coalesced into shared `enqueueJobs` calls \
(`coalesce.py`), so the asyncio connection pool is not the bound; one event loop doing the \
validation and encoding (as for `enqueue_many`, {many_us} µs per job in this run) plus the \
Redis time ({async_redis_us} µs per job) is.""",
    """\
**Dispatch alone** (>= {target_dispatch}/s: {verdict_dispatch}, {dispatch_rate}/s): \
{dispatch_redis_us} µs of Redis CPU per promoted job inside `promoteDue`: one `XADD` per job \
(a stream entry cannot be added in bulk), the record rewritten with its new state and entry id \
(one `HSET` per batch), `HMGET`s in growing steps and one `ZREM` per batch of {promote_batch}. \
Of these the `XADD` is the largest part and the rewrite the smallest (History below): a layout \
that skipped the rewrite would not change this figure. \
{target_dispatch}/s would be {dispatch_target_us} µs per job including the client. The raw \
pipelined `XADD` of the same entries from redis-py: {dispatch_raw}/s in this run (the script \
avoids the client's per-command packing).""",
    """\
**Dispatch cost over the backlog** (within {flat_max}x: {verdict_flat}; Redis CPU \
{backlog_cpu_small} -> {backlog_cpu_large} µs per promoted job, {backlog_cpu_ratio}x, from a \
{backlog_small} to a {backlog_large} backlog): the head read (`ZRANGEBYSCORE ... LIMIT`) is \
O(log N) and every other command takes constant time per job, but Redis' dicts double at \
each power of two and rehash incrementally, and until a rehash is done every lookup probes two \
tables (`benchmarks/backlog_ramp.py` shows it with `DEBUG HTSTATS-KEY`). That is Redis' own \
cost for any structure of that size, transient, not the queue's layout.""",
    """\
**Bounded script calls** ({verdict_calls}; bound applied: median call <= {call_bound_us} µs): \
median `promoteDue` call ({promote_batch} jobs) {call_promote_us} µs, median `enqueueJobs` call \
({enqueue_batch} jobs) {call_enqueue_us} µs (SLOWLOG of the dispatch-alone run). \
`dispatcher.PROMOTE_BATCH` and `enqueuing.ENQUEUE_BATCH` set these sizes; a larger batch promotes \
faster per job but blocks Redis longer per call. On a loaded machine a call's wall time includes \
being descheduled, so the median grows with the load.""",
    """\
**Drain** (>= {target_drain}/s with one process: {verdict_drain_10000}, {drain_one}/s; \
{drain_raw}/s for the raw single-process `XREADGROUP`+`XACK`+`XDEL` consumer of the same run): \
per job the worker creates a task, parses the `XREADGROUP` reply (redis-py), decodes the record \
and blob (msgspec), runs the handler under `handler_timeout` and batches the ack (one `XACK` and \
one `XDEL` per topic and one `HMGET` and `HDEL` per batch inside `ackJobs`); hiredis (the \
`streamdelay[hiredis]` extra) parses the replies and packs the commands. **Scaling with two \
processes** \
(>= {scaling}x: {verdict_scaling_10000}, {drain_two}/s, {drain_scaling}x): Redis needs \
{drain_redis_us} µs of CPU per job, i.e. {drain_redis_cores} of a core at the one-process \
rate, on a machine of {cores} cores that also runs the worker processes; a second process gains \
only the CPU left over, and a drain this short lasts about as long as the processes take to \
reach full speed. Bound: cores (worker processes and Redis).""",
    """\
**Memory per delayed job** (<= {target_memory} B with the benchmark's body of {body_bytes} B of \
JSON: {verdict_memory}, \
{memory_per_job} B): the record ({record_bytes} B: text header and MessagePack blob) in one \
hash field plus one sorted-set member (skiplist node, dict entry, member sds). The raw floor, a \
bare `ZADD` + `HSET` of the same record from redis-py, costs {memory_raw_floor} B in this run, \
{memory_overhead} B from ours: Redis' own per-entry cost is the bulk. {target_memory} B needs a \
smaller record (no text header, a packed body) or one entry per job instead of two, i.e. \
dropping the id index that gives `get`, `cancel` and `reschedule` a constant-time lookup by id.""",
    """\
**Memory after the drain** ({verdict_memory_back}, {memory_left} B vs the baseline after a \
backlog that took {memory_grew} MB): acknowledged jobs are `XACK`ed and `XDEL`eted and their \
record deleted (no tombstone unless `keep_done`), so `used_memory` returns to the baseline; \
what is left is the empty stream's and the group's own structures.""",
)

HISTORY = """\
Quoted from earlier runs, with their date and run; none of these figures is this run's.

- 2026-11-24, 01:03-01:41 UTC (load average 0.8-6 from other sessions' runs on the 2 cores), \
issue 16, the dispatcher's wake-up. `benchmarks/lateness_trace.py` (new: per-job timestamps \
inside one worker process) split each job's lateness into the dispatcher's wake-up (promote call \
sent - due), the request's way to Redis (script clock - sent), the read (`XREADGROUP` entry in \
the worker - script clock) and the handler start. Before (01:04, load 2.2): at 200 due/s p99 4.0 \
ms, of which the wake-up p99 2.4 ms; the dispatcher's waits (epoll until the last ms, that ms in \
a timer thread) ended 0.17-0.27 ms after their deadline at p50 and 2.5-3.5 ms at p99; Python's \
collector (37-57 collections per run, generation 0 p50 0.12-0.2 ms, generation 1 0.6-0.8 ms, \
`gc.freeze()` already on) overlapped 0-11 of the slowest 1 % at load below 3 (the periodic \
tasks, acks, paused/limits polls and the lateness flush, were not traced apart). A `timerfd` on \
the loop against the thread hop, alternating in one process (01:05, load 2.3): p50 0.05 against \
0.18 ms past the deadline, the same p99 (3.7 ms: the machine). With the `timerfd` (01:07, load \
1.7): p99 1.53 ms at 200 due/s and 0.67 ms at 2,000 due/s; waits past their deadline p50 \
0.05-0.06 ms. A slow promote call (the script's clock read late) used to pull the next wake-up \
early by half its round trip, for a call that moved nothing: 48 of 1,962 calls at 200 due/s \
(01:13, load 4.9); with the server clock estimated from the fastest call (per partition, \
`ServerClock`), 2 of 1,997 (01:15, load 3.1). What the tail is made of now: the slowest 1 % at \
load 5.8 (01:24) were 19.5 ms late on average at 2,000 due/s while the worker's main thread had \
been runnable but not running (kernel `schedstat`) for 28 ms between the promote call before \
theirs and theirs; at 200 due/s 19.6 ms late, 16.8 ms waiting for a CPU. At load 1.7 (01:07) the \
chain at p50: due to call sent 0.08-0.11 ms (of it the timer 0.05-0.06 ms), request to the \
script 0.06-0.08 ms, read 0.12-0.14 ms, handler start 0.07 ms (lateness p50 0.32-0.40 ms). \
`lateness_rates.py --rates 200 2000`, alternating old (/work/main, 63b32df) and new, 13 runs \
each, 01:17-01:41 UTC, load average 0.75-4.5: medians p50 0.42 against 0.62 ms, p99 3.10 against \
4.19 ms, max 6.08 against 7.23 ms at 200 due/s; p50 0.33 against 0.60 ms, p99 2.89 against 3.77 \
ms, max 6.22 against 8.31 ms at 2,000 due/s; p99 <= 2 ms in 6 and 5 of 13 runs against 2 and 2 \
of 13. At 20,000 due/s with 2 worker processes, 17 runs each, 01:08-01:33 UTC, load average \
0.8-4.4: medians p50 0.87 against 1.11 ms, p99 14.0 against 11.8 ms, max 26.2 against 23.9 ms; \
p99 <= 50 ms in 12 of 17 runs against 10 of 17 (the other runs: processes that never caught up, \
90-626 ms, in both); the two worker processes used 2.68-2.87 s of CPU per run against 2.92-3.19 \
s (3 runs each, 01:33-01:35): not a regression, within this machine's noise. With the final code \
at load 0.6 (01:43, the trace run): p99 0.71 ms at 2,000 due/s and 1.73 ms at 200 due/s; most of \
the slowest 1 % had the thread waiting for a CPU, a few neither waiting nor running \
(`schedstat`: a run-queue wait of 0.1-0.5 ms and 0.7-1.4 ms on the CPU in a 5 ms interval \
holding a 2-3 ms stall: the thread slept past its timer; inside this virtual machine, a \
Firecracker kernel, the host pausing its vCPU looks like that, unverified). The p99 target needs \
a worker that gets a CPU within about a millisecond of its timer: on this shared machine it does \
not, whatever the code. Further steps and their cost: cores of their own for Redis and the \
worker (`taskset`/cpusets; what the target then measures is the chain above); a shorter \
scheduler slice for the worker's thread (Linux >= 6.12, `sched_setattr` with `sched_runtime` 0.1 \
ms, no privilege): two rounds each at 01:29-01:31 were inconclusive (p99 1.83 / 2.00 against \
2.29 / 3.79 ms at 2,000 due/s, 9.33 / 0.80 against 3.26 / 1.42 ms at 200 due/s), not adopted; \
real-time priority needs `CAP_SYS_NICE` and can starve Redis on 2 cores; spinning through the \
last 0.1 ms of each wait would cost a core at 2,000 due/s (gaps of 0.5 ms).
- 2026-11-24, 00:07-00:08 UTC (load average 0.33-0.42), the hot path before and after this \
round's features (schedules, limits, the lateness record, durability, the pull API, the \
one-job enqueue and batched ack), same hour, `lateness_rates.run(rates=(200, 2000))`, one \
worker process, alternating: the start-of-round code (5cf9d6f) p99 1.99 / 1.97 ms at 200 due/s \
and 2.36 / 2.31 ms at 2,000 due/s; the merged code 2.17 / 2.03 ms and 2.00 / 2.07 ms. Within \
the noise of this machine at 200/s, lower at 2,000/s: topics without limits or schedules pay \
nothing measurable.
- 2026-11-23, 23:27-23:29 UTC (load average 0.7-1.1), issue 16, right after the `make bench` \
of 23:26: `benchmarks/drain.py --jobs 100000` with 1, 2 and 3 worker processes: 37,964, 39,137 \
and 39,234 jobs/s (Redis CPU 11.8-14.5 µs per job); the previous release's code 20,060 and \
28,585 jobs/s with 1 and 2 (24.1 and 19.6 µs): one process now takes about a core and Redis \
half of one, so on 2 cores the curve is flat from the second process on (bound: cores, not \
Redis). The single-enqueue ratio to the raw `ZADD` round trip moves with the machine far more \
than with the code: 78% in that `make bench`, 47-62% in seven `benchmarks/enqueue.py` runs \
minutes later (Redis CPU 67-86 µs per call, against 42-46 µs at 22:48, the same code), 81-88% \
at 22:48; the previous release's code 35-42% in the same hours.
- 2026-11-23, 22:25-22:45 UTC, issue 16 (performance round 2), small runs on the shared machine \
(load average 3-9 from other sessions' tests, so wall-clock rates are noisy; Redis time per call \
from `INFO commandstats` is the steadier figure): \
the one-job `enqueueJob` script takes 18-26 µs of Redis time per call against 27-39 µs for a \
one-job `enqueueJobs` and ~2 µs for a `ZADD` (A/B on one server, 5,000 calls each, 4 rounds); an \
empty `EVALSHA` with the same arguments costs 3-5 µs. `INFO commandstats` of 2,000 \
`Queue.enqueue` calls (23:18 UTC): `EVALSHA` 32.9 µs per call, of which the commands inside \
7.2 µs (`TIME` 0.45, three `TYPE` 0.66, `HSETNX` 2.9, `ZADD` 2.2, `HINCRBY` 0.9, `ZRANGE` 0.5): \
the rest is the fixed cost of each `redis.call` and of the script itself; no other command is \
sent (no `WAIT` without `replicas=`). A further step: read the head with `ZRANGE ... \
WITHSCORES` before the writes (it fails on a wrong type, so no `TYPE` for `delayed`) and undo \
the record when a later write fails, three calls fewer (~5 µs), at the price of a failed call \
that writes and takes back instead of checking first. The Python side of `Queue.enqueue` without \
I/O (a stub client) went from 24.4 to 13.7 µs per call. `benchmarks/enqueue.py --single 3000`, \
back to back: 46% of the raw `ZADD` round trip (8,309/s) against 22% (5,111/s) for the \
previous code. Back to back at load average 1.1-1.4 (22:48-22:49 UTC), `benchmarks/enqueue.py` \
defaults: single enqueue 7,786/s and 7,852/s, 88% and 81% of the raw `ZADD` round trip (8,811 and \
9,710/s), against 4,252/s, 35% of 11,986/s for the previous code; `enqueue_many` 51,639 and \
48,170/s against 48,697/s; `AsyncQueue` with 100 callers 29,073 and 36,661/s against 30,056/s. \
`benchmarks/drain.py --jobs 10000`: 21,931/s with one process and 42,537/s with two against \
20,019 and 16,460/s (`ackJobs` median call 250 against 591 µs); dispatch alone of 100,000 jobs \
105,168/s against 128,043/s for the unchanged `promoteDue` (the spread of two runs). Lateness at \
20,000 due/s measured at load average 3.7-4 only (p99 0.8-3 s for both versions, one or two \
processes). At load average 1.1-1.7 (22:55-22:56 UTC), `benchmarks/lateness_rates.py`, this \
round's code against the previous: p99 2.89 against 3.80 ms at 200 due/s and 6.46 against \
4.58 ms at 2,000 due/s (one process each; "promote" p99 2-5 ms for both: the dispatcher's \
wake-up under load, unchanged code), and 185 against 464 ms at 20,000 due/s with two processes \
(one per core). Worker CPU per job in a 20,000-job drain by one in-process worker (`/proc` CPU \
time, embedded dispatcher included): 24-26 µs against 36-38 µs; of it, the handler time limit \
went from `asyncio.timeout`'s timer per job (~4.5 µs) to one shared timer per 10 ms (~1 µs). \
Batched `ackJobs`: 3.2-5.2 µs of Redis time per \
acknowledged job against \
6.9 µs (20,000 deliveries in calls of 100). redis-py's asyncio connections pack commands in \
Python: 245 µs for an `ackJobs` call of 64 deliveries against 50 µs with hiredis, now used. \
`promoteDue` variants on 20,000 due jobs: 4.3 µs of Redis time per job, 4.2 without the record \
rewrite, 2.6-2.9 without the `XADD`. Memory: a bare `HSET` + `ZADD` of 20,000 ids costs \
349 B per job with records of 140-156 B and 381 B with 157-170 B (jemalloc's 160 and 192 B \
classes); the benchmark's record is 161-165 B. Flame graphs (py-spy, 500 Hz, 15,000 single \
enqueues; a 20,000-job drain by one in-process worker), before and after: \
[enqueue before](img/flame-enqueue-before.svg), [enqueue after](img/flame-enqueue-after.svg), \
[worker before](img/flame-worker-before.svg), [worker after](img/flame-worker-after.svg).
- 2026-11-23, `make bench` quick run of 10:00 UTC against the `bench-full` run of 10:30 (load ~0 \
both times): this virtual machine itself ran at about half the speed in the second, raw ceilings \
included (redis-py `ZADD` round trips 8.6k/s against 11.9k/s; `XREADGROUP`+`XACK`+`XDEL` 66k/s \
against 121k/s).
- 2026-11-23, py-spy on one worker process at a steady 20k due jobs/s: handler tasks 33 % (task \
creation 7.5 %, `asyncio.timeout` and `current_task` ~6 %, record decoding), the read loop 26 % \
(mostly redis-py parsing the `XREADGROUP` reply), acks 12 %, the event loop's select 12.5 %, the \
dispatcher 2.5 % plus its timer thread 8 %; ~60 µs of worker CPU per job at 10k due/s (`/proc` \
CPU time), i.e. one event loop saturates at ~17-20k jobs/s. One run's lateness through the 3 s \
at 20k/s: 2 ms at the start, 26 ms after 0.15 s, 61 ms at 1.5 s, 109 ms at 2.9 s.
- 2026-11-23, `INFO commandstats` during single enqueues: the one-job `enqueueJobs` call took \
33-48 µs of Redis time against ~2 µs for a `ZADD`; the commands inside it ~6 µs (TIME 0.4, HMGET \
0.9, HSET 1.4, ZADD 2.1, HINCRBY 0.9, ZRANGE 0.4), a call for an existing id (which writes \
nothing) still 17-28 µs.
- 2026-11-23, `benchmarks/dispatch.py` with `PROMOTE_BATCH` 300: 155k/s, but each call blocked \
Redis 1.7 ms; batches of 1,000 blocked it 5-9 ms per call, `enqueueJobs` batches of 500 ~4 ms.
- 2026-11-23, `benchmarks/backlog_ramp.py` (one backlog grown through the sizes): Redis CPU per \
promoted job 6.0 µs at 10k, 7.2 at 1M, 7.7 at 4M, 5.7 at 8M (not rehashing), 10.1 at 10M \
(rehashing past 8,388,608 entries: 1.7x).
- 2026-11-23, a 30k drain with one process, 2 runs each in the same hour: 9,860-10,740 jobs/s \
with hiredis, 8,560-9,034 without.
- 2026-11-23, `benchmarks/http_bench.py` at its small default size, 22:24-22:42 UTC, load average \
2-8 (the machine was shared: read the rates as low bounds; CPU per request is the steadier \
figure, though it too grows under contention). Before the fixes below: one `streamdelay serve` \
process spent 283-370 µs of CPU per one-job enqueue request on httptools + uvloop and 420-545 µs \
on h11 + asyncio (then what `streamdelay[web]` installed); a no-op ASGI app under the same \
uvicorn 30-37 µs (httptools) and 180-190 µs (h11). After them (async guards, later scopes checked \
without Litestar guards, httptools + uvloop in the extra, no JSON pre-scan): 230-327 µs per \
request, 4.2k requests/s with the server at 0.97 core in the quietest run (5k/s target: not met \
on this machine); the batch route 23-26 µs of server CPU per job (13.5-35.2k jobs/s measured, the \
library's own `enqueue_many` 13-48k/s in the same runs: 50k/s not met); reserve + ack p50 1.2-2.0 \
ms in every run, p99 2.1-20 ms across the runs, under 5 ms in about half of them (one consumer in \
a closed loop: every preemption of the client, the server or Redis is in its tail).
- 2026-11-23, py-spy (samples holding the GIL) on `serve` during one-job enqueues, httptools + \
uvloop, before the fixes: uvicorn writing responses 17-19 % (headers and body go out as two \
`send` calls), Litestar's routing, middlewares, signature parsing and response 25 %, the route \
guards 15 % (Litestar ran the plain `def` guard in a worker thread for every request, \
`sync_to_thread`, and copies the route handler per guard), the route handler 24 % (the library's \
coalescer 13 %, redis-py 14 %), the event loop the rest. An `async def` guard (an experiment, \
back to back with the code of then): 213-230 µs per request instead of 283-310 and reserve + ack \
p99 2.06 ms instead of 2.95. Async guards still took 9 %, Litestar copying the route handler \
(`copy.copy`) for every guard call; with the scopes checked in the authentication middleware \
instead, the 22:46 profile: socket writes ~31 % (uvicorn's two `send` calls per response 21 %, \
the one to Redis 9.5 %), the route handler with the library and redis-py 28 % (the coalescer 15 \
%), Litestar's routing, middlewares and response ~30 %, uvicorn's parsing 6 %.
- 2026-11-23, py-spy on the batch route (1,000 jobs per request) before the fixes: the JSON \
nesting pre-scan (a regex over the whole 150 kB body, 6-7 ms per request) 13 %, the library's \
encoding and redis-py's command packing ~30 %, JSON decode and encode 7 %; the route cannot be \
faster than the library's `enqueue_many` in the same process. Reserve + ack cost 1.2-1.9 ms of \
server CPU per pair (2 requests, 3 Redis round trips), most of it in socket writes (4 to the \
client, 3 to Redis) on this virtual machine.
- 2026-11-23, `benchmarks/http_bench.py` after the one-job enqueue was answered before Litestar \
routes it, 22:50-22:51 UTC, load average 3.5-3.9: 127-147 µs of server CPU per request, 4.4-5.2k \
requests/s with the server at 0.65-0.66 core (the client took 0.20-0.22, Redis 0.12-0.13, other \
people's processes the rest of the 2 cores), i.e. ~6.8-7.9k/s for a whole core; the batch route \
22 µs per job, 37.4-38.3k jobs/s (the library's `enqueue_many` 53-59k/s in the same runs); \
reserve + ack p50 1.2 ms, p99 2.9-5.6 ms. py-spy on the one-job enqueue: uvicorn writing \
responses 38 % (two `send` calls per response: headers, then body), its parsing 12 %, the \
library's coalescer 15 % and redis-py 21 % (its write to Redis 9 %), Litestar no longer on that \
path. A reserve is 3 Redis round trips (`HEXISTS` of the pause flag, `XREADGROUP`, `HEXISTS` \
again) and an ack 1: sent as one pipeline, the three of a reserve would be one.
"""


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if measured(value) else NOT_MEASURED


def _per_call_us(per_second: float) -> float:
    return 1e6 / per_second if measured(per_second) and per_second > 0 else math.nan


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
        "single_us": _fmt(_per_call_us(single), ".0f"),
        "single_raw_us": _fmt(_per_call_us(single_raw), ".0f"),
        "single_redis_us": _fmt(g("enqueue_single_redis_us"), ".1f"),
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
        "call_promote_us": _fmt(g("call_median_us_promoteDue"), ",.0f"),
        "call_enqueue_us": _fmt(g("call_median_us_enqueueJobs"), ",.0f"),
        "target_drain": f"{targets.DRAIN_MIN:,}", "drain_one": _fmt(one, ",.0f"),
        "drain_two": _fmt(two, ",.0f"), "drain_raw": _fmt(g("drain_10000_raw"), ",.0f"),
        "drain_scaling": _fmt(targets.ratio(two, one), ".2f"), "scaling": f"{targets.SCALING:g}",
        "drain_redis_us": _fmt(drain_redis, ".1f"),
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
