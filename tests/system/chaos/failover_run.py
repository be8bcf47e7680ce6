"""The failover chaos run: a Sentinel-managed primary with one replica, 3 workers (embedded
dispatchers) and 1 standalone dispatcher, a producer with ``replicas=1`` (every enqueue answers
once the replica has it; a ``NotDurable`` is retried with the same ids, which is safe), while the
primary is killed (-9) with its replica stalled behind it: the replica is SIGSTOPped, 24 MB are
written behind it so what follows stays in the primary's memory, the primary dies, the replica
resumes and Sentinel promotes it; the old primary comes back (empty) as the new replica. The
checker then requires that no acknowledged job was lost (docs/guarantees.md#durability).

``python -m tests.system.chaos.failover_run --jobs 3000 --spread 20 --out chaos-results/failover``
(``make chaos-failover``). Exit status 1 when the verdict fails (see ``Verdict.ok``).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.support.cluster import LocalSentinel
from tests.support.redis_server import RedisServer, wait_until
from tests.system.chaos.app import job_body, job_id
from tests.system.chaos.run import (
    TOPIC,
    Processes,
    Production,
    Settings,
    fresh_history,
    locate_lost,
    print_summary,
    read_history,
    wait_for_drain,
    write_record,
)
from tests.system.chaos.verdict import Verdict, judge

FILLER_BYTES = 24 << 20  # more than the loopback socket buffers hold
STALL_S = 1.0  # the replica stays stopped this long before the kill
NOT_DURABLE_RETRIES = 100  # per batch; each waits replica_timeout, then 0.2 s
# Tombstones (producer and workers): a batch retried after NotDurable finds the jobs that ran
# meanwhile as ``done`` instead of creating them again (docs/guarantees.md#durability).
KEEP_DONE_S = 120.0


def _signal(server: RedisServer, sig: signal.Signals) -> None:
    if server.process is not None:
        os.kill(server.process.pid, sig)


class FailoverFault(threading.Thread):
    """At 40 % of the spread: stall the replica, fill the primary's output to it, kill -9 the
    primary, resume the replica, wait for Sentinel to promote it, bring the old primary back."""

    def __init__(self, local: LocalSentinel, queue: str, spread: float) -> None:
        super().__init__(daemon=True)
        self.local, self.queue, self.spread = local, queue, spread
        self.events: list[dict[str, object]] = []

    def run(self) -> None:
        time.sleep(0.4 * self.spread)
        primary, replica = self.local.master, self.local.replica
        at = time.time() * 1000
        try:
            _signal(replica, signal.SIGSTOP)
            try:
                with primary.client() as client:
                    client.set(f"{PartitionKeys(self.queue, 0).meta}:filler", b"x" * FILLER_BYTES)
                time.sleep(STALL_S)
                primary.kill()
            finally:
                _signal(replica, signal.SIGCONT)
            promoted = wait_until(lambda: self.local.failed_over_to(replica), timeout=60,
                                  interval=0.1)
            took = time.time() * 1000 - at
            primary.start()  # back, empty: Sentinel makes it the new primary's replica
            detail = (f"primary port {primary.port} killed with its replica stalled; "
                      f"{'promoted' if promoted else 'NOT promoted'} port {replica.port} after "
                      f"{took / 1000:.1f} s; old primary restarted as replica")
        except (redis.RedisError, OSError) as exc:
            detail = f"not injected: {exc}"
        self.events.append({"at": at, "kind": "kill_primary_failover", "detail": detail,
                            "end": time.time() * 1000})


def produce_durable(url: str, queue_name: str, settings: Settings, rng: random.Random,
                    production: Production) -> int:
    """Enqueue in batches of 20 with ``replicas=1`` over the first half of the spread; a batch
    that raised ``NotDurable`` goes again with the same ids until it is confirmed. Returns how
    many ``NotDurable`` answers it got."""
    queue = sd.Queue(queue_name, url=url, retry_for=60, ttr=3, max_attempts=50, replicas=1,
                     replica_timeout=1.0, keep_done=KEEP_DONE_S)
    batch, unconfirmed = 20, 0
    pause = (settings.spread / 2) / max(settings.jobs / batch, 1)
    started = time.monotonic()
    for start in range(0, settings.jobs, batch):
        left = max(0.4, settings.spread - (time.monotonic() - started))
        # An absolute ``at`` (this machine's clock is the server's): a retried batch asks for
        # the very same due times, so a job that ran from an unconfirmed first write is not
        # judged early against the retry's due.
        specs = [sd.JobSpec(TOPIC, job_body(n, 0, rng), id=job_id(n),
                            at=time.time() + rng.uniform(0.2, left))
                 for n in range(start, min(start + batch, settings.jobs))]
        for _ in range(NOT_DURABLE_RETRIES):
            try:
                for result in queue.enqueue_many(specs):
                    production.acknowledged[result.id] = result.due
                break
            except sd.NotDurable:  # written, not confirmed: the same ids again
                unconfirmed += 1
                time.sleep(0.2)
            except sd.StreamdelayError:
                production.refused += len(specs)
                break
        else:
            production.refused += len(specs)
        time.sleep(max(0.0, started + (start // batch + 1) * pause - time.monotonic()))
    queue.close()
    return unconfirmed


def run_failover_chaos(settings: Settings) -> Verdict:
    """Run the failover scenario and return the checked verdict (also written to
    ``settings.out``)."""
    os.environ.pop("STREAMDELAY_PARTITIONS", None)
    os.environ["CHAOS_KEEP_DONE"] = str(KEEP_DONE_S)  # read by the worker processes
    rng = random.Random(settings.seed)
    history = fresh_history(settings.out)
    production = Production()
    began, began_wall = time.monotonic(), time.time()
    queue = f"chaos{uuid.uuid4().hex[:6]}"
    with LocalSentinel(down_after_ms=500) as local:
        processes = Processes(local.url, queue, history, settings.workers)
        fault = FailoverFault(local, queue, settings.spread)
        time.sleep(1.0)
        fault.start()
        started = time.monotonic()
        unconfirmed = produce_durable(local.url, queue, settings, rng, production)
        time.sleep(max(0.0, settings.spread - (time.monotonic() - started)))
        fault.join()
        wait_for_drain(production.acknowledged, history, settings.drain_timeout)
        processes.stop()
        verdict = judge(production.acknowledged, read_history(history), fault.events,
                        production.refused)
        locate_lost(verdict, local.url, queue, production.acknowledged, history)
    verdict.setup = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began_wall)),
        "run_seconds": round(time.monotonic() - began, 1),
        "jobs": settings.jobs, "spread_s": settings.spread, "seed": settings.seed,
        "topology": "sentinel: 1 primary + 1 replica", "producer_replicas": 1,
        "keep_done_s": KEEP_DONE_S,
        "not_durable_answers_retried": unconfirmed,
        "worker_processes": settings.workers, "standalone_dispatchers": 1,
        "processes_started": processes.started,
    }
    write_record(settings.out, verdict, production)
    return verdict


def main() -> int:
    """Command line entry for ``make chaos-failover``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--spread", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("chaos-results/failover"))
    args = parser.parse_args()
    settings = Settings(jobs=args.jobs, spread=args.spread, seed=args.seed, out=args.out,
                        drain_timeout=60.0)
    verdict = run_failover_chaos(settings)
    print_summary(verdict, args.out)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
