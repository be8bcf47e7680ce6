"""Memory per delayed job: today's layout against the compact delayed layout's candidates
(issue 39 item 3; docs/design.md#compact-delayed-layout).

A measuring prototype, not the package's scripts: ``delayed_layouts.lua`` (beside this file)
writes each candidate layout exactly as the design says and promotes from it the way
``promoteDue`` does (XADD of today's whole record, the state-s record in ``PREFIX jobs``), so
the bytes and the Redis time per job are the layout's own. Layouts:

- ``today``: one hash (id -> record) and one sorted set (id -> due), today's record (the
  ``today`` rows match what ``lua/enqueueJobs-6.lua`` stores: 348 B with ``e<i>`` ids here
  against 348 B in issue 39's measurement of the real scripts);
- ``tree``: due times in time buckets, records in id shards, both B-tree leaves of at most 100
  members that stay listpack-encoded (a sorted set of bucket bounds and one of shard bounds
  index them: O(log N)), today's record;
- ``dense``: ``tree`` with the dense record of a delayed job (no state, delay instead of
  created, defaults left empty);
- ``packed``: ``dense`` with a 32-hex id (the library's own) kept as its 16 bytes;
- ``zrec``: the dense record (without its due time) in the time bucket itself, as the member
  ``<id>|<record>``; the id shards keep id -> due time only (``zpacked``: with packed ids);
- ``list``: the dense record (without its due time) as one element of a list beside its time
  bucket, the bucket's member ``<id>|<position>``; the id shards keep id -> due time only
  (``lpacked``: with packed ids). A list keeps any element in listpack form, so this one needs no
  server setting; ``lazy``: ``list`` whose promote leaves the id shards alone and sweeps a few
  of them per call for fields whose job left (a due time earlier than the first delayed job's);
  ``lcheap``: ``lazy`` with a record that becomes today's by concatenation (attempts, created, ttr,
  max written out: today's record without its state and due time);
- ``+h256`` / ``+z256``: the server run with ``hash-max-listpack-value 256`` /
  ``zset-max-listpack-value 256`` (default 64: a shard or bucket with a value longer than 64 B is
  a hash table or skiplist, not a listpack).

For each backlog size and id kind, one private redis-server per layout: ``used_memory`` less
the clients' buffers (as the peers harness counts it) before and after adding the backlog (calls
of 100 jobs; after a warm-up queue of 5,000 jobs, as the peers harness warms up) over the job
count is the bytes per delayed job; then ``due`` more jobs due in the past are added and
promoted by calls of 200 after ``CONFIG RESETSTAT`` (Redis µs per promoted job from ``INFO
commandstats``), which checks that
every due job moved, none before its time, that 500 jobs of the backlog are found by id
through the layout's lookup path with their due times, and that 500 others are cancelled by id
and found no more. Ids: ``seq`` is the peers harness's
(``e<i>``, due times one ms apart an hour ahead, in order), ``batch`` the same ids 160 to a
due time (one ``enqueueJobs`` call's jobs share its ms: a bucket of one due time must split),
``hex`` the library's (32 hex
digits, due times spread at random over 24 h). Body: the peers harness's ~100 B of JSON.
Run: ``.venv/bin/python benchmarks/micro/delayed_layouts.py [--sizes 10000 1000000]
[--layouts today dense+256] [--ids seq hex]``; 10M: ``--sizes 10000000``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.core.harness import Section, redis_server, verdict
from streamdelay.protocol.codec import encode_blob

SCRIPT = (Path(__file__).with_name("delayed_layouts.lua")).read_text()
LAYOUTS = ("today", "tree", "dense", "dense+h256", "packed+h256", "zrec", "zrec+z256",
           "zpacked+z256", "list", "lpacked", "lazy", "lcheap")
CHOSEN = ("today", "list", "lpacked", "lazy")  # run at every size (the others: small ones)
ALL_UPTO = 100_000  # backlogs up to this size run every layout
CONFIGS = {"h256": ("--hash-max-listpack-value", "256"),
           "z256": ("--zset-max-listpack-value", "256")}
PREFIX = "sd:{mem#0}:"
PAD = "x" * 70  # benchmarks/peers/record.py: {"id": ..., "pad": ...} is ~100 B of JSON
ADD_BATCH, PROMOTE_BATCH, FIND_SAMPLE, WARM_UP = 100, 200, 500, 5_000
NOW = 1_795_483_830_001  # the benchmark's clock (ms): due times are set against it
TARGET_BYTES = 200  # issue 39 item 3


def _jobs(kind: str, count: int, seed: int) -> list[tuple[str, int]]:
    """``count`` (id, due ms) pairs: ``seq`` the peers harness's, ``hex`` the library's."""
    if kind == "seq":
        return [(f"e{i}", NOW + 3_600_000 + i) for i in range(count)]
    if kind == "batch":  # 160 jobs per ms, as one enqueueJobs call of enqueue_many writes them
        return [(f"e{i}", NOW + 3_600_000 + i // 160) for i in range(count)]
    rnd = random.Random(seed)
    return [(uuid.UUID(int=rnd.getrandbits(128)).hex, NOW + 3_600_000 + rnd.randrange(86_400_000))
            for _ in range(count)]


def _stored(client: Any) -> int:
    """``used_memory`` less the clients' buffers, as the peers harness counts it
    (``benchmarks/peers/workload.py`` ``stored_memory``): a pipeline's query buffer is no job's."""
    info = client.info("memory")
    return int(info["used_memory"]) - int(info.get("mem_clients_normal", 0))


def _add(client: Any, sha: str, layout: str, jobs: list[tuple[str, int]],
         prefix: str = PREFIX) -> int:
    """Add ``jobs`` in calls of ADD_BATCH, pipelined; returns how many were added."""
    added, pipe = 0, client.pipeline(transaction=False)
    for start in range(0, len(jobs), ADD_BATCH):
        argv: list[Any] = ["add", layout]
        for job_id, due in jobs[start:start + ADD_BATCH]:
            body = msgspec.json.encode({"id": job_id, "pad": PAD})
            argv += [job_id, due, due - 3_600_000, 60000, 10, "bench.job",
                     encode_blob("j", body, {}, None)]
        pipe.evalsha(sha, 1, prefix + "jobs", *argv)
        if len(pipe) >= 20:
            added += sum(pipe.execute())
    return added + int(sum(pipe.execute()))


def one(size: int, layout: str, kind: str, due: int) -> dict[str, Any]:
    """One layout, one backlog: bytes per delayed job, Redis µs per promoted job, checks."""
    name, _, config = layout.partition("+")
    extra = CONFIGS[config] if config else ()
    with redis_server(*extra) as server:
        client = server.client()
        info = client.info("server")
        server_name = (f"Valkey {info['valkey_version']}" if "valkey_version" in info
                       else f"Redis {info['redis_version']}")
        sha = client.script_load(SCRIPT)
        backlog = _jobs(kind, size, 1)
        # a warm-up queue first, as the peers harness warms up: the server's one-time costs
        # (~27 B/job of a first 10k in a fresh server) are no job's
        _add(client, sha, name, _jobs(kind, WARM_UP, 3), "sd:{warm#0}:")
        before = _stored(client)
        began = time.perf_counter()
        added = _add(client, sha, name, backlog)
        add_s = time.perf_counter() - began
        after = _stored(client)
        rnd = random.Random(2)
        past = [(f"p{i}" if kind != "hex" else uuid.UUID(int=rnd.getrandbits(128)).hex,
                 NOW - 1 - rnd.randrange(600_000)) for i in range(due)]
        _add(client, sha, name, past)
        client.config_resetstat()
        moved, late_ok = 0, True
        while True:
            count, _first, last = client.evalsha(sha, 1, PREFIX + "jobs", "promote", name, NOW,
                                                 PROMOTE_BATCH)
            if count == 0:
                break
            moved += count
            late_ok = late_ok and last <= NOW
        usec = client.info("commandstats")["cmdstat_evalsha"]["usec"]
        sample = rnd.sample(backlog, min(2 * FIND_SAMPLE, len(backlog)))
        kept, gone = sample[:FIND_SAMPLE], [j for j, _ in sample[FIND_SAMPLE:]]
        cancelled = client.evalsha(sha, 1, PREFIX + "jobs", "cancel", name, *gone)
        found = client.evalsha(sha, 1, PREFIX + "jobs", "find", name,
                               *(j for j, _ in kept), *gone)
        return {"bytes": (after - before) / size, "add_us": add_s * 1e6 / size,
                "promote_us": usec / max(moved, 1), "keys": client.dbsize(),
                "server": server_name,
                "ok": added == size and moved == due and late_ok and cancelled == len(gone)
                and found == [d for _, d in kept] + [-1] * len(gone)}


def run(sizes: list[int] | tuple[int, ...] = (10_000, 1_000_000),
        layouts: tuple[str, ...] = LAYOUTS,
        kinds: tuple[str, ...] = ("seq", "hex", "batch")) -> Section:
    """The section: one row per backlog size, id kind and layout (past ``ALL_UPTO`` jobs only
    the layouts of ``CHOSEN`` among ``layouts`` and no ``batch`` ids: ~30-60 s per million jobs
    each)."""
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows, figures, correct, servers = [], {}, True, set()
    for size in sizes:
        for kind in (k for k in kinds if size <= ALL_UPTO or k != "batch"):
            for layout in (layouts if size <= ALL_UPTO else
                           tuple(x for x in layouts if x in CHOSEN)):
                r = one(size, layout, kind, min(20_000, max(size // 5, 1)))
                correct = correct and r["ok"]
                servers.add(r["server"])
                figures[f"delayed_bytes:{layout}:{kind}:{size}"] = r["bytes"]
                rows.append([f"{size:,}", kind, layout, f"{r['bytes']:.0f}",
                             f"{r['promote_us']:.1f}", f"{r['add_us']:.1f}", f"{r['keys']:,}",
                             "yes" if r["ok"] else "NO"])
    chosen = {s: figures.get(f"delayed_bytes:list:seq:{s}") for s in sizes}
    verdicts = [verdict(f"layout 'list' <= {TARGET_BYTES} B per delayed job at {s:,} (e<i> ids, "
                        "~100 B JSON body, default server settings)",
                        None if b is None else b <= TARGET_BYTES,
                        "not run" if b is None else f"{b:.0f} B") for s, b in chosen.items()]
    notes = [f"Measured {started} on {', '.join(sorted(servers))} (its default settings but "
             "where a layout names one): a prototype of each layout (benchmarks/micro/"
             "delayed_layouts.lua), not the package's scripts; today's layout is what they "
             "write. Promote: Redis µs per promoted job with the backlog in place (calls of "
             f"{PROMOTE_BATCH}); add: wall µs per job from Python, pipelined calls of "
             f"{ADD_BATCH}. Checked: every due job moved, none early, {FIND_SAMPLE} backlog ids "
             "found by id with their due times, 500 others cancelled by id and found no more."]
    return Section("Delayed-job memory: compact layout candidates (issue 39 item 3)",
                   ["backlog", "ids", "layout", "B/job", "promote µs/job", "add µs/job",
                    "keys", "checks"], rows, verdicts, notes, correct, figures)


def main() -> None:
    """Print the section for the sizes, layouts and id kinds given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=LAYOUTS)
    parser.add_argument("--ids", nargs="+", default=["seq", "hex", "batch"],
                        choices=["seq", "hex", "batch"])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    section = run(args.sizes, tuple(args.layouts), tuple(args.ids))
    print(section.markdown()) if args.markdown else section.print()


if __name__ == "__main__":
    main()
