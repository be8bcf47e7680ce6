"""The fixed text of ``docs/benchmarks.md``: how to read the tables, and what bounds the figures.

The tables are regenerated on every ``make bench``; this text comes from profiling sessions
(py-spy on worker processes, pyinstrument on producers, Redis SLOWLOG/commandstats) and says
where each figure is bounded.
"""

INTRO = """\
**Read these figures as noisy.** The machine has 2 cores shared by Redis, the worker processes,
the producer, and often by other people's test runs, so one run differs from the next by
±10-30 % and a lateness tail can come from a neighbour. The raw Redis ceilings next to each
figure come from the same run on the same server, so the ratios are the steadier number.

Method: every benchmark starts its own `redis-server` (7.0, no persistence) on a free loopback
port; workers are real `python -m streamdelay worker benchmarks.bench_app:worker` processes
(embedded dispatcher each); lateness = handler start - due, both on the Redis server clock (the
worker's local clock plus an offset measured against Redis `TIME`; error bound in the table).
"Never early" is checked twice: handler start >= due, and the stream entry id (stamped by `XADD`
inside `promoteDue` with the server clock) >= due. "promote" = entry id time - due (dispatcher's
share), "pickup" = handler start - entry id time (reader's share).

Targets: lateness p99 < 10 ms, the guarantees (once, never early, cancelled never run), bounded
script calls (SPEC §8) and flat dispatch cost over the backlog (SPEC §10). Enqueue, dispatch and
drain throughput and memory have no numeric target here: they are figures next to the raw
ceiling of the same run.
"""

ANALYSIS = """\
## What bounds the figures (profiles)

Profiled with py-spy (worker processes during a 100k drain), pyinstrument (producers) and the
Redis SLOWLOG / `INFO commandstats` (per-script server time).

- **Lateness at 200 and 2k due jobs/s** (target p99 < 10 ms): p50 is ~1.5-2 ms, made of the
  dispatcher's timer (the script reports `now` in whole ms and the event loop wakes on a 1 ms
  granularity: "promote" p99 ~2 ms) plus ~0.5 ms for XREADGROUP wake-up and task start. Before
  this round, the max was ~20-27 ms in every run: **gen-2 garbage collections of the worker
  process** (15-20 ms each, seen with `BENCH_GC_LOG=1`), which stall the embedded dispatcher.
  Fixed: `Worker.run()` calls `gc.freeze()` before serving, so start-up objects (modules, redis-py,
  click) leave the collector's view; the max fell to ~9 ms.
- **Lateness at 20k due jobs/s**: 2 workers + Redis + the producer on 2 cores run near capacity
  (~35 µs of worker CPU and ~15-20 µs of Redis CPU per job). In the steady part p99 is ~5-10 ms;
  the misses come from the ramp from idle (first ~0.5 s: connection pools grow, every loop wakes
  at once), then from CPU contention when the run is shared with other processes. Bound: CPU
  cores, not Redis round trips (PING p99 ~0.2 ms). More cores or more worker processes on other
  hosts lift it; one Python process handles ~25-30k no-op jobs/s when it has a core to itself.
- **Single enqueue (one call per job)**: one round trip each, like the raw `ZADD`; the rest is
  Python (plan, argument packing) and the Lua call (~18 µs of Redis time for one job vs ~1 µs for a
  `ZADD`: TIME, HGET, HSET, ZADD, HINCRBY, head check, tombstone purge). Fixed in this round: the
  tenacity retry controller was built for every call (~15 µs sync, ~20 µs asyncio); now the first
  attempt runs bare and the policy takes over only after a connection error (`runner.py`), and the
  script SHA-1 is computed once (`scripts.py`). `AsyncQueue` under 100 callers went from ~6k to
  ~12k jobs/s, the sync path from ~5.5k to ~8k; what is left is redis-py's asyncio connection
  pool (the raw async `ZADD` pays it too).
- **enqueue_many**: ~6-7 µs of Redis time per job inside `enqueueJobs` (the five commands are
  ~2 µs; the rest is Lua: argument handling, record building) and ~8 µs of Python per job
  (validation, msgspec encoding, redis-py packing of 8 arguments per job). Raw pipelined `ZADD`
  does one command per job with no record, so ~30 % of it is the expected ratio.
- **Dispatch**: ~5.5 µs of Redis time per promoted job (HGET, XADD of the record, HSET, ZREM,
  HINCRBY per topic); with the client side light it runs about as fast as pipelined raw `XADD`.
  The head read (`ZRANGEBYSCORE ... LIMIT`) is O(log N): the cost per job is flat from a 10k to a
  1M backlog (and 10M in `bench-full`).
- **Bounded script calls (SPEC §8)**: batches of 1,000 in `promoteDue` blocked Redis 5-9 ms per
  call and `enqueueJobs` batches of 500 ~4 ms (SLOWLOG). Now 150 (`dispatcher.PROMOTE_BATCH`) and
  120 (`plans.ENQUEUE_BATCH`), ~1 ms each, with no measurable loss of throughput (a big
  `enqueue_many` still pipelines all its calls in one round trip).
- **Drain / end-to-end**: per job the worker creates a task, parses the XREADGROUP reply
  (redis-py), decodes the record and blob (msgspec), runs the handler under `handler_timeout` and
  batches the ack. `asyncio.wait_for` cost an extra task and future per job; on Python 3.11+
  `asyncio.timeout` is used instead (`delivery.py`, ~5 % more jobs/s). The raw ceiling (one
  process doing pipelined XREADGROUP+XACK+XDEL) skips all per-job Python work, so the ratio
  stays low; the bound is worker CPU, i.e. worker processes x cores.
- **Memory per delayed job**: the record (header + MessagePack blob, ~160 B for a 100 B body) in
  one hash field plus one sorted-set member; the same data stored raw costs the same, so there
  is no overhead beyond the record itself.
"""
