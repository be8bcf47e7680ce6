"""The nemesis run (docs/reliability.md#make-nemesis): real workers, dispatchers, ``streamdelay
serve``, HTTP consumers and producers on a durable redis-server (``appendonly yes``,
``appendfsync always``) while a nemesis injects faults from a seeded schedule; every operation
and every handler run is recorded as a history (tests/system/nemesis/history.py), and the whole
history is checked once the queue has settled. The report prints the smallest part of the
history that shows each violation; exit status 1 when there is one.

``python -m tests.system.nemesis.run --seed N --duration S --workloads plain,retry,... --faults
kill,stop,... --out DIR [--quick]`` (``make nemesis``, ``make nemesis QUICK=1``). Network faults
(``cut_loud``, ``cut_silent``, ``degrade``) need root: the workers named ``n*`` and one
dispatcher then run in network namespaces of their own (tests/system/nemesis/net.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import streamdelay as sd
from tests.system.nemesis import topology
from tests.system.nemesis.app import BROKEN, KEEP_DONE_ENV, TTR, WORK_S_ENV, queue_for
from tests.system.nemesis.faults import FAULTS, NET_FAULTS, Fault, Nemesis, Target, schedule
from tests.system.nemesis.fleet import Fleet
from tests.system.nemesis.history import (
    Allowances,
    Recorder,
    Violation,
    check,
    format_report,
    load,
)
from tests.system.nemesis.key_limits import check_key_limits
from tests.system.nemesis.net import Net, require_root
from tests.system.nemesis.priorities import check_priorities, judged_pairs
from tests.system.nemesis.targets import process_target
from tests.system.nemesis.workloads import REPLICAS_ENV, WORKLOADS

QUEUE = "nemesis"
KEY_CONCURRENCY = 1  # the keyed workload's limit per fairness key (key_limits.py checks it)
PROCESS_FAULTS = ("kill", "stop", "redis_restart")
UNREADABLE_GIVE_UP = 20  # jobs Redis could not answer for, after which read_back stops asking
NET_PRODUCERS = ("plain", "results", "prio")  # producers in namespaces of their own (cuts)
DEFAULT_FAULTS = {
    "single": [f for f in FAULTS if f not in ("failover", "migrate")],
    "sentinel": ["kill", "stop", "failover"],
    "cluster": ["kill", "stop", "migrate"],
}


@dataclass
class Settings:
    """One run: what it runs, for how long, with which faults."""

    seed: int
    duration: float
    workloads: list[str]
    faults: list[str]
    out: Path
    quick: bool = False
    rogue: bool = False
    partitions: int = 2
    settle_s: float = 90.0
    plan: list[Fault] | None = None  # these faults instead of the seed's schedule
    keep_done: float = 600.0  # every process's keep_done (app.py: KEEP_DONE_ENV)
    topology: str = "single"  # topology.py
    broken: str | None = None  # every worker a broken build (app.py BROKEN)
    work_s: str | None = None  # each handler run's length, "lo,hi" s (app.py WORK_S)


def _subnet(net_name: str) -> Net:
    """A ``Net`` on the first free 10.214.k.0/24."""
    for index in range(256):
        try:
            return Net(net_name, index)
        except RuntimeError:
            continue
    raise RuntimeError("no free subnet of 10.214.0.0/16")


def build_fleet(s: Settings, queue: str, partitions: int, net: Net | None) -> Fleet:
    """Define every process of the run (none started yet). With a ``Net`` every worker but
    the last, the dispatcher, ``serve`` and the producers of ``NET_PRODUCERS`` run in
    namespaces of their own."""
    fleet = Fleet(s.out, queue, partitions, net)
    workers = 2 if s.quick else 3
    for i in range(workers):  # the first ones in namespaces when there are network faults
        fleet.worker(f"n{i}" if net and i < workers - 1 else f"w{i}", in_net=bool(net) and
                     i < workers - 1, rogue=s.rogue and i == 0,
                     broken=s.broken)
    fleet.dispatcher("d0", in_net=net is not None)
    if "http" in s.workloads:
        fleet.serve(in_net=net is not None)
        for i in range(2):
            fleet.http_consumer(f"h{i}")
    for i, workload in enumerate(s.workloads):
        fleet.producer(f"p-{workload}", workload, s.seed * 100 + i, s.duration,
                       in_net=net is not None and workload in NET_PRODUCERS)
    return fleet


def targets_of(fleet: Fleet, servers: list[Target]) -> list[Target]:
    """What the nemesis may hit: the topology's targets (Redis, Sentinel, the cluster),
    workers, dispatchers, ``serve``, HTTP consumers, and the producers in namespaces (``stop``
    and cuts)."""
    found = list(servers)
    for member in fleet.members.values():
        if member.kind in ("worker", "dispatcher", "serve", "http") or (
                member.kind == "producer" and member.host is not None):
            name = member.name
            found.append(process_target(
                name, member.kind,  # type: ignore[arg-type]
                lambda name=name: fleet.process(name),  # type: ignore[misc]
                (lambda name=name: fleet.start(name))  # type: ignore[misc]
                if member.kind != "producer" else None,
                host=member.host.name if member.host else None))
    return found


def settle(queue: sd.Queue, fleet: Fleet, timeout: float) -> bool:
    """Wait until the producers are done and the queue holds no job that still has to run
    (nothing delayed, ready, reserved or waiting for its parents); True when it did."""
    deadline = time.monotonic() + timeout
    fleet.wait_kind("producer", timeout)
    while time.monotonic() < deadline:
        try:
            total = queue.stats().total
            waiting = queue.jobs("waiting", limit=1).jobs
            if total.delayed + total.ready + total.reserved == 0 and not waiting:
                return True
        except sd.StreamdelayError:
            pass
        time.sleep(0.5)
    return False


def read_back(queue: sd.Queue, directory: Path) -> tuple[int, int]:
    """Note every enqueued job's final state (its kept result, else its state now, else
    ``missing``) in the history; a job Redis cannot answer for (a cluster slot left half
    moved) is noted ``unreadable``, which the checker does not call lost: the run is marked
    as gone wrong instead (after ``UNREADABLE_GIVE_UP`` of them the rest are not asked). The
    number of jobs read, and of those unreadable."""
    record = Recorder(directory, "final")
    jobs = sorted({r.job for r in load(directory)
                   if r.kind == "enqueue" and r.phase == "invoke" and r.job})
    unreadable = 0
    for job in jobs:
        if unreadable >= UNREADABLE_GIVE_UP:  # Redis broken for good: do not wait per job
            unreadable += 1
            record.note("final_state", job, state="unreadable", error="not asked")
            continue
        try:
            try:
                result = queue.result(job)
            except sd.ResultTimeout:
                result = None
            if result is None:
                info = queue.get(job)
                record.note("final_state", job, state=info.state if info else "missing")
            else:
                record.note("final_state", job, state=result.state, value=result.value)
        except sd.StreamdelayError as exc:
            unreadable += 1
            record.note("final_state", job, state="unreadable", error=f"{exc}")
    return len(jobs), unreadable


def flows_of(history: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The chains (a fan-in as one chain per parent) and batches the producers wrote down."""
    chains: dict[str, list[str]] = {}
    batches: dict[str, list[str]] = {}
    for path in history.glob("flows-*.jsonl"):
        for line in path.read_text().splitlines():
            if line.endswith("}"):
                flow = json.loads(line)
                (chains if flow["kind"] == "chain" else batches)[flow["name"]] = flow["jobs"]
    return chains, batches


def run(s: Settings) -> tuple[list[Violation], dict[str, object]]:
    """One whole run; the violations and the run's figures."""
    history = s.out / "history"
    for old in (history, s.out / "logs"):  # a run again into the same directory starts afresh
        shutil.rmtree(old, ignore_errors=True)
    history.mkdir(parents=True)
    net = None
    if any(f in NET_FAULTS for f in s.faults) or any(f.name in NET_FAULTS for f in s.plan or []):
        require_root()
        net = _subnet(f"r{os.getpid() % 100000}")
    os.environ[KEEP_DONE_ENV] = f"{s.keep_done:g}"  # this process's queue and every child's
    if s.work_s:
        os.environ[WORK_S_ENV] = s.work_s
    servers: topology.Servers | None = None
    fleet: Fleet | None = None
    nemesis: Nemesis | None = None
    try:
        if s.topology == "single":  # hosts first: Redis listens on their addresses (net.py)
            fleet = build_fleet(s, QUEUE, s.partitions, net)
            servers = topology.start(s.topology, QUEUE, s.partitions, net)
        else:  # the queue's name is chosen once the cluster is up (a partition per primary)
            servers = topology.start(s.topology, QUEUE, s.partitions, net)
            fleet = build_fleet(s, servers.queue, servers.partitions, net)
        fleet.url_of = servers.url_of
        if servers.replicas:
            fleet.env[REPLICAS_ENV] = str(servers.replicas)
        queue = queue_for(servers.url, servers.queue, servers.partitions)
        queue.limit("keyed", key_concurrency=KEY_CONCURRENCY)
        for name in fleet.members:
            fleet.start(name)
        targets = targets_of(fleet, servers.targets)
        faults = s.plan if s.plan is not None else schedule(
            s.seed, s.duration, targets, s.faults, mean_gap_s=2.0 if s.quick else 3.0,
            cut_max_s=3.0)
        nemesis = Nemesis(faults, {t.name: t for t in targets}, net,
                          Recorder(history, "nemesis"))
        nemesis.start()
        time.sleep(s.duration)
        nemesis.stop()
        settled = settle(queue, fleet, s.settle_s)
        producers_failed = fleet.exited("producer")
        queue.close()
        queue = queue_for(servers.url, servers.queue, servers.partitions, retry_for=1.0)
        read, unreadable = read_back(queue, history)
        queue.close()
    finally:
        if nemesis is not None:
            nemesis.stop()  # again after an error mid-run: nothing left stopped or cut off
        if fleet is not None:
            fleet.stop()
        if net is not None:
            net.close()
        if servers is not None:
            servers.stop()
    chains, batches = flows_of(history)
    records = load(history)
    violations = (check(records, Allowances.from_docs(TTR * 1000), chains=chains,
                        batches=batches) + check_key_limits(records, KEY_CONCURRENCY)
                  + check_priorities(records, servers.partitions))
    kinds = Counter(r.kind for r in records if r.phase == "invoke")
    figures: dict[str, object] = {
        "seed": s.seed, "topology": s.topology, "quick": s.quick, "broken": s.broken,
        "partitions": servers.partitions, "duration_s": s.duration, "records": len(records),
        "operations": sum(kinds.values()), "operations_by_kind": dict(kinds),
        "outcomes": dict(Counter(r.phase for r in records
                                 if r.phase in ("ok", "fail", "unknown"))),
        "runs": sum(1 for r in records if r.kind == "start"),
        "acknowledged": {w: sum(1 for r in records if r.process == f"producer-p-{w}"
                                and r.kind == "enqueue" and r.phase == "ok")
                         for w in s.workloads},
        "faults": dict(Counter(r.fields.get("name") for r in records
                               if r.kind == "fault" and r.phase == "begin")),
        "fault_errors": nemesis.errors if nemesis is not None else [],
        "chains": len(chains), "batches": len(batches),
        "callbacks": sum(1 for r in records if r.kind == "callback"),
        "results_awaited": sum(1 for r in records if r.kind == "result"),
        "jobs_read_back": read, "unreadable": unreadable, "settled": settled,
        "producers_failed": producers_failed,
        "priority_pairs": judged_pairs(records, servers.partitions),
        "violations": len(violations),
        "violations_by_rule": dict(Counter(v.rule for v in violations)),
        "workers": sum(1 for m in fleet.members.values() if m.kind == "worker"),
        "in_namespaces": sorted(m.name for m in fleet.members.values() if m.host)}
    (s.out / "summary.json").write_text(json.dumps(figures, indent=2, default=str))
    (s.out / "violations.txt").write_text(format_report(violations, limit=None) + "\n")
    return violations, figures


def parse(argv: list[str]) -> Settings:
    """The command line."""
    parser = argparse.ArgumentParser(prog="nemesis")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--faults", default=None,
                        help="default: every fault the topology has (single: all but failover "
                             "and migrate; sentinel: kill, stop, failover; cluster: kill, stop, "
                             "migrate); none: no fault")
    parser.add_argument("--topology", choices=topology.TOPOLOGIES, default="single")
    parser.add_argument("--broken", choices=sorted(BROKEN),
                        help="every worker a broken build (the checker's own test)")
    parser.add_argument("--work-s", help="each handler run's length, 'lo,hi' seconds")
    parser.add_argument("--out", type=Path, default=Path("nemesis-results"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rogue", action="store_true",
                        help="a broken worker that runs jobs before they are due (the "
                             "checker's own test)")
    parser.add_argument("--keep-done", type=float, default=600.0,
                        help="seconds an acknowledged job's id stays taken (0: the default "
                             "of a queue; see docs/reliability.md#make-nemesis)")
    args = parser.parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    asked = args.faults or ",".join(DEFAULT_FAULTS[args.topology])
    faults = [f for f in asked.split(",") if f and asked != "none"]
    for w in workloads:
        if w not in WORKLOADS:
            parser.error(f"unknown workload {w!r} (known: {', '.join(WORKLOADS)})")
    if args.topology != "single" and set(faults) & set(NET_FAULTS):
        parser.error(f"the {args.topology} topology has no network faults (topology.py)")
    out = args.out / (f"seed-{args.seed}" if args.topology == "single"
                      else f"{args.topology}-seed-{args.seed}")
    return Settings(args.seed, args.duration, workloads, faults, out, quick=args.quick,
                    rogue=args.rogue, keep_done=args.keep_done, topology=args.topology,
                    broken=args.broken, work_s=args.work_s)


def main(argv: list[str]) -> int:
    """Run, print the figures and the report; 1 on a violation or a run that went wrong."""
    s = parse(argv)
    violations, figures = run(s)
    print(f"nemesis {s.topology} seed {s.seed}: {figures['operations']} operations, "
          f"{figures['runs']} "
          f"handler runs, {sum(figures['faults'].values())} faults "  # type: ignore[attr-defined]
          f"{figures['faults']}, {len(violations)} violations (history: {s.out / 'history'})",
          flush=True)
    print(json.dumps(figures, default=str))
    if violations:
        print(format_report(violations))
    idle = [w for w, n in figures["acknowledged"].items() if not n]  # type: ignore[attr-defined]
    broken = (not figures["settled"] or figures["producers_failed"] or idle
              or figures["unreadable"] or figures["fault_errors"])
    if broken:
        print(f"the run itself went wrong: settled={figures['settled']}, producers that "
              f"failed: {figures['producers_failed']}, workloads with no acknowledged "
              f"enqueue: {idle}, jobs unreadable at the end: {figures['unreadable']}, faults "
              f"that failed: {figures['fault_errors']} (see {s.out / 'logs'})")
    return 1 if violations or broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
