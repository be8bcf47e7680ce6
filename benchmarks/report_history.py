"""The dated figures of earlier runs quoted under the History heading of docs/benchmarks.md
(none of them is the current run's); kept apart from the templates in ``report_notes``."""

HISTORY = """\
Quoted from earlier runs, with their date and run; none of these figures is this run's.

- 2026-11-24, 02:17-02:24 UTC (load average 0.38-1.15), issue 16, `enqueue_many` past 100k \
jobs/s: `enqueueJobsV2` (a reply of one value per job, the due time as a number when created, \
else `<state>:<due_ms>`), the calls of a pipeline sent each as soon as it is packed (Redis runs \
the first while Python packs the next), `EnqueueResult` built in one go, the topic check \
remembered per topic. Alternating runs of `benchmarks/enqueue.py`'s `enqueue_many` rounds \
(50,000 jobs in lists of 1,000, 50 rounds against the raw pipelined `ZADD`, a fresh process and \
private Redis per run) against the code this started from (684e706): at 02:17:38-02:18:09 \
(load 0.38-1.15, 8 runs each) 85,597-99,304/s, median 90,465, against 101,697-109,058/s, \
median 104,297, with the new reply and the sending; the new reply alone (3 runs) 85,096-100,767/s \
against 85,597-99,304/s, Redis CPU 3.9-4.1 against 4.1-4.7 µs per job; reading each call's \
reply while Redis runs the next (results filled from a callback of the runner, 8 runs) \
100,295-106,601/s, median 104,546: no gain, not kept. The final code at 02:23:59-02:24:09 \
(load 0.71-0.75, 5 runs each): 104,130-114,660/s, median 109,828 (8.7-9.6 µs per job, Redis \
3.9-4.6 µs) against 89,088-99,502/s, median 93,230 (10.1-11.2 µs, Redis 4.2-4.7 µs); whole \
`benchmarks/enqueue.py` runs at 02:24 (load 0.6-0.8): 106,174 and 115,666/s against 97,869/s. \
The Python side per job without I/O (`timeit`, a list of 1,000): building the `JobSpec` 0.61 \
µs, `prepare_job` 2.38 -> 2.10 µs (of it the topic pattern 0.2 µs, now skipped for a topic seen \
before, and a `bytes | bytearray | memoryview` union built per call, now a tuple), cutting and \
packing the calls 0.13 + 0.66 µs (the packing now overlaps Redis but for the first call), the \
results from the new reply 0.29 µs (`EnqueueResult` 391 -> 249 ns). py-spy (02:22, 100,000 \
jobs, 506 samples): validation and encoding 35 %, sending and reading 24 %, the results 13 %, \
building the `JobSpec`s 6 %. What bounds it: every job is validated before the first write, so \
~2.7 µs of Python per job cannot overlap Redis' ~4 µs; the rest is the socket, the reply and \
the results. Further steps and their cost: validating a list while the previous list's calls \
run needs an API that takes lists before it answers (a streaming `enqueue_many`); less Redis \
time per job means a record built without `string.format` or fewer commands per call (~0.65 µs \
for the record string, measured before); a `PreparedJob` without a tuple of eight values per \
job would take a C extension or a msgspec `Struct` encoder for the arguments (~0.3 µs).
- 2026-11-24, 02:17-02:28 UTC (load average 0.0-2.3), issue 16, dispatch alone \
(`dispatch_alone` of `benchmarks/dispatch.py`: 100,000 due jobs, one `Dispatcher` calling \
`promote_once` in a loop, SLOWLOG of every call), variants alternating in the same minutes. \
`benchmarks/dispatch.py` itself, 11 rounds each at 02:26-02:28 (load 0.8-2.2): the code it \
started from (684e706, batches of 150) 222,169/s at the median (188,876-228,521), Redis CPU \
3.91 µs per job, median call 557 µs; this code (batches of 200) 247,082/s (221,032-258,594; \
250,000/s or more in 3 of 11), 3.68 µs, median call 702 µs, each run's longest call 1.09 ms at \
the median (the old code's 0.97 ms; the longest of all 4.1 against 4.9 ms: a descheduled \
Redis). What each step gave, medians of 4 rounds at 02:17-02:19 (load 0.0-1.4; "outside" is \
the wall time per call minus its `EVALSHA` time: the round trip, Redis reading and answering \
the call, the client): the old code 216,738/s, 3.79 µs of `EVALSHA` time per job, 126 µs \
outside per call; the leaner loop of `promoteDueV2` (one pattern that captures the kept parts \
of a delayed record instead of positions and two `string.sub`, counters instead of length \
operators, no list of the ids leaving; same name, same behaviour) 224,577/s, 3.62 µs; the \
promote calls on a held connection (`AsyncLane`) 233,187/s, 93 µs outside; batches of 200 \
243,466/s, median call 732 µs; of 250 263,457/s, median call 845 µs. Building the call once \
per partition and packing it once (02:28, load 1.6-1.8): 242,497 against 239,022/s, within \
the noise. Where a job's Redis time goes (batches of 150): the `XADD` 1.74 µs (the script \
without it: 1.92 µs per job), the record rewrite (`HSET`) 0.19 µs, the rest 1.73 µs (the head \
read, the `HMGET`s, the record parse and the new header's string, the `ZREMRANGEBYRANK`, and \
per call the clock, eight `TYPE` checks, the layout read, the sweep and three `ZRANGE`s). So \
the bound at 200 per batch is ~3.6-3.7 µs in Redis plus ~0.5 µs of the call's part outside \
the script (90-110 µs per call), ~4.1-4.2 µs per job, 240,000-250,000/s on this machine, \
against the 4.0 µs that 250,000/s needs. Further steps and their cost: batches of 250 reach it \
(263,457/s) but block Redis 0.85 ms per call at the median, too near the 1 ms bound to keep on \
a loaded machine; writing the call straight to the connection's stream (redis-py's \
`send_packed_command` wraps each write in `asyncio.wait_for`, a task per call before Python \
3.12) saved 15-20 µs per call (247,406/s against 244,693/s, 6 rounds at 02:20-02:21) but \
relies on a private attribute of redis-py, not adopted; the `XADD` itself is a floor (one per \
job, a stream entry cannot be added in bulk).
- 2026-11-24, 01:02 UTC (load average 0.4), issue 16, what a delayed job's memory is made of: \
10,000 entries written with redis-py pipelines into a fresh Redis 7.0.15, `INFO used_memory` \
per entry: a hash field with a 16-character key and a value of 60 / 100 / 124 / 130 / 160 / 190 \
bytes 153 / 196 / 212 / 244 / 276 / 308 B (the value's allocation steps with jemalloc's size \
classes), a sorted-set member (the same key, a score) 139 B, both with a 160-byte value 413 B, a \
sorted-set member that is the 166-byte record itself 297 B, a stream entry with the two fields \
`id` and `rec` (160 bytes) 199 B. A job findable by id (a hash field) and by due time (a \
sorted-set member) costs the body plus 230-255 B of Redis' own structures (the value's \
jemalloc size class decides), whatever the record's text: 250 B per job with a ~100 B body \
needs one structure per job, i.e. no lookup by id (the layout of a peer that keeps only a \
sorted set of serialized messages), or non-default encodings (`hash-max-listpack-value` \
above the record's size) that a library should not impose on its users' Redis.
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
- 2026-11-24, 01:22-01:40 UTC (load average 1.8-2.5, other work on the machine), issue 16, \
`benchmarks/backlog_ramp.py 10000 10000000`, one server grown to 10M delayed jobs (fill \
155-190 s), 10,000 due jobs promoted on top, Redis CPU per promoted job: with one `ZREM` per \
batch 3.1 µs at 10k, 7.3 µs at 10M while the jobs hash was still rehashing into 2^24 buckets \
(2.4x) and 4.9 µs once the script had driven the rehash to its end (1.58x); with the range \
removal (`ZREMRANGEBYRANK`, this code) 3.1, 6.0 (1.94x) and 4.3 µs (1.39x; wall 3.7 -> 4.8 µs \
per job, 1.30x). Finishing that rehash took 400,000 lookups (1.4 s of Redis time). \
Dispatch alone on the same machine at 01:19 (50,000 due jobs, three runs): 249,486-266,262 \
jobs/s (Redis 3.2-3.4 µs per job) when client and Redis ran on separate cores, 117,138 when one \
shared a core with another process: the dispatch figure of a run moves with where the \
scheduler puts the two processes.
- 2026-11-24, 01:06-01:35 UTC (load average 0.6-2.5), issue 16, the enqueue paths: this code \
against the code it started from (63b32df), alternating `benchmarks/enqueue.py` runs (default \
sizes) in the same minutes. Single enqueue: 86-93% of the raw `ZADD` round trip at \
01:30:33-01:30:45 (load 1.8-1.9; 14,252-30,563/s) and 86-93% at 01:34:45-01:35:01 (load 1.5; \
11,279-26,733/s), against 50-71% and 51-72% (8,503-17,837/s): the old ratio swings with the \
load, the new one much less. `enqueue_many` 94,195-101,632/s against 89,069-93,792/s at \
01:30, 76,098-88,322/s against 70,222-78,421/s at 01:35. Of the single gain: `enqueueJobV2` \
(no `TYPE` checks, `pcall` writes taken back on failure, a plain number as reply) 9.0 against \
11.2 µs of Redis time per call (`INFO commandstats`, 11 alternating rounds of 2,000; an empty \
script 1.1 µs); the Python side without I/O (a stub client) 5.7 against 7.4 µs per call; and \
the held connection: an empty `EVALSHA` round trip took 31.4 µs through redis-py's \
`execute_command`, 25.5 µs on a connection taken from the pool and given back per call, 19.7 µs \
on one held (01:14 UTC). `enqueue_many` per job (01:10 UTC, before this round's Python trims): \
`JobSpec` 1.2-1.6 µs, validation and encoding 2.9-3.0 µs, the round 7.0-8.2 µs, of which Redis \
CPU 4.1-4.4 µs; after them (01:29 UTC) 1.1, 2.6 and 6.6-6.8 µs. Inside `enqueueJobs` per job \
the commands take ~1.3 µs (`ZADD` 0.7, `HSET` 0.2-0.5, `HMGET` 0.3) and the script's Lua the \
rest: the `ARGV` strings 0.34, the record string 0.65 (`string.format` is the cheapest of three \
ways tried), the reply rows 0.3; a leaner loop changed nothing measurable. Flame graphs \
(py-spy, 500 Hz, idle samples left out, `benchmarks/enqueue_profile.py`), before and after: \
[single before](img/flame-enqueue-single-before.svg), \
[single after](img/flame-enqueue-single-after.svg) (15,000 calls: 902 samples in the workload \
before, redis-py's `execute_command` 90 % of them with its pool checkout, release and packing; \
453 after, `Lane.call` 88 %, mostly the socket calls), \
[many before](img/flame-enqueue-many-before.svg), [many after](img/flame-enqueue-many-after.svg) \
(100,000 jobs in lists of 1,000: 519 and 488 samples; building the `JobSpec`s 14 and 7 %, \
encoding 12 and 7 %, the pipeline's packing 15 and 10 %). Next steps for `enqueue_many` \
(100k/s is 10 µs per job): a reply of one number per created job (a new `enqueueJobsV2`: \
~0.3 µs of Redis time and about as much Python per job) and reading each bounded call's reply \
while Redis runs the next (the runners handing replies to the plan as they arrive: up to the \
~2.5 µs per job of packing and reply handling hidden behind Redis' time); validation and \
encoding must stay ahead of the first write, so they cannot overlap.
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
