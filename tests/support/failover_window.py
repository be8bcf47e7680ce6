"""The replication window, made visible and closed: a failover under load with the replica
stalled, for ``replicas=0`` (acknowledged writes of the stall are lost) and ``replicas=1``
(none is: the calls of the stall answered ``NotDurable`` instead). docs/guarantees.md#durability.

How the window is opened on purpose (docs of REDIS-NOTES "Making the replication window
visible"): SIGSTOP the replica, write a filler larger than the loopback socket buffers on the
primary so what follows stays in the primary's memory, keep producing, cancel a job, kill -9
the primary, SIGCONT the replica and let Sentinel (or the cluster) promote it. The old primary
comes back (empty) as a replica of the new one, so ``replicas=1`` calls can succeed again.

What the guarantee is about is read on the promoted replica as soon as it took over, before the
old primary returns (``found_on_promoted``). Under Sentinel the old primary rejoins with
``replica-priority 0``: until its first sync it is an empty replica whose link was never up, and
Sentinel counts such a replica as a good candidate. A spurious ``+sdown`` of the new master right
after ``+switch-master`` (500 ms ``down-after`` on a loaded machine) then started a second
failover to it, and the promoted replica, reconfigured to follow it, resynced from an empty
dataset: every job gone, a test artefact that a second failover caused, not the window.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.support.cluster import Producer, wait_for
from tests.support.redis_server import RedisServer

FILLER_BYTES = 24 << 20  # more than the loopback socket buffers hold (rmem + wmem)
STALL_S = 1.0  # how long the producer runs against the stalled replica before the kill


@dataclass
class WindowReport:
    """What one failover did to acknowledged jobs and cancels."""

    replicas: int
    acknowledged: int  # enqueue calls that returned before the kill
    lost_before: list[str]  # ... of which never handled
    unconfirmed: int  # calls that raised NotDurable (not acknowledged; retried after)
    cancel_before_ran: bool  # a job cancelled (acknowledged) before the stall ran anyway
    cancel_during: str  # "acknowledged", or "not durable" (then retried after the failover)
    cancel_during_ran: bool  # the job cancelled during the stall ran anyway
    duplicates: int  # deliveries beyond the first
    promotion_s: float
    found_on_promoted: int  # acknowledged jobs the promoted replica held when it took over
    found_before_worker: int  # acknowledged jobs the new primary still held before the worker ran
    handled: int  # deliveries the worker made in all
    other_errors: list[BaseException] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the test log."""
        return (f"replicas={self.replicas} acknowledged={self.acknowledged} "
                f"lost_before={len(self.lost_before)} not_durable={self.unconfirmed} "
                f"cancel_before_ran={self.cancel_before_ran} cancel_during={self.cancel_during} "
                f"cancel_during_ran={self.cancel_during_ran} duplicates={self.duplicates} "
                f"promotion={self.promotion_s:.1f}s found_on_promoted={self.found_on_promoted} "
                f"found_before_worker={self.found_before_worker} "
                f"handled={self.handled} other_errors={len(self.other_errors)}")


def _signal(server: RedisServer, sig: signal.Signals) -> None:
    assert server.process is not None
    os.kill(server.process.pid, sig)


def failover_with_stalled_replica(
    url: str, name: str, replicas: int, primary: RedisServer, replica: RedisServer,
    promoted: Callable[[], bool], rejoin_as_replica: bool = False,
) -> WindowReport:
    """Produce on queue ``name`` (one partition) with ``replicas``; stall ``replica``, cancel a
    job, kill ``primary``, let ``replica`` take over, bring the old primary back, retry what
    raised ``NotDurable``, run a worker to the end and report what was lost."""
    queue = sd.Queue(name, url=url, replicas=replicas, replica_timeout=0.3, retry_for=30)
    patient = queue.with_replicas(replicas, replica_timeout=5.0)  # for the calls that must hold
    for job_id in ("cancel-before", "cancel-during"):
        patient.enqueue("t", job_id, id=job_id, delay=2.0)
    producer = Producer(queue, "j", pause=0.01)
    producer.start()
    try:
        wait_for(lambda: len(producer.accepted) >= 30, 60, "jobs acknowledged before the stall")
        assert patient.cancel("cancel-before")  # acknowledged just before the stall and kill
        _signal(replica, signal.SIGSTOP)
        try:
            with primary.client() as client:  # same slot as the queue: the victim's memory
                client.set(f"{PartitionKeys(name, 0).meta}:filler", b"x" * FILLER_BYTES)
            try:
                queue.cancel("cancel-during")
                cancel_during = "acknowledged"
            except sd.NotDurable:
                cancel_during = "not durable"
            time.sleep(STALL_S)
            acknowledged = {job_id for job_id, _ in producer.accepted}
            killed = time.monotonic()
            primary.kill()
        finally:
            _signal(replica, signal.SIGCONT)
        wait_for(promoted, 60, "the replica to take over")
        promotion = time.monotonic() - killed
        found_on_promoted = sum(patient.get(job_id) is not None for job_id in acknowledged)
        if rejoin_as_replica:  # under Sentinel: never an empty master the promoted one could
            # follow, nor an empty replica a second (spurious) failover could promote
            primary.extra += ["--replicaof", "127.0.0.1", str(replica.port),
                              "--replica-priority", "0"]
        primary.start()  # back, empty: it follows the new primary (so WAIT 1 can succeed)
        count = len(producer.accepted)
        wait_for(lambda: len(producer.accepted) > count + 20, 60, "acknowledged calls again")
    finally:
        producer.stop()
    unconfirmed = [e for e in producer.errors if isinstance(e, sd.NotDurable)]
    for error in unconfirmed:  # a retry is safe: idempotent by id
        for job_id in error.job_ids:
            patient.enqueue("t", int(job_id[1:]), id=job_id)
    if cancel_during == "not durable":
        patient.cancel("cancel-during")
    found = sum(patient.get(job_id) is not None for job_id in acknowledged)
    seen: list[str] = []
    worker = sd.Worker(queue, concurrency=16)
    worker.handler("t")(lambda job: seen.append(job.id))
    worker.run(until_idle=True)
    queue.close()
    return WindowReport(
        replicas, len(acknowledged), sorted(acknowledged - set(seen)), len(unconfirmed),
        "cancel-before" in seen, cancel_during, "cancel-during" in seen,
        len(seen) - len(set(seen)), promotion, found_on_promoted, found, len(seen),
        [e for e in producer.errors if not isinstance(e, sd.NotDurable)])
