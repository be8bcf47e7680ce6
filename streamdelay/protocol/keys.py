"""Every Redis key name streamdelay uses, built in one place (see docs/keys.md).

A queue is split into partitions; every key of one partition carries the hash tag
``{<queue>#<partition>}`` so all scripts of a partition touch a single Redis Cluster slot.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

KEY_NAMESPACE = "sd"


@dataclass(frozen=True)
class PartitionKeys:
    """The keys of one partition of a queue."""

    queue: str
    partition: int

    @property
    def prefix(self) -> str:
        """Common prefix of every key of this partition, ending in ``:``."""
        return f"{KEY_NAMESPACE}:{{{self.queue}#{self.partition}}}:"

    @property
    def delayed(self) -> str:
        """Sorted set: job id -> due time (epoch ms, server clock)."""
        return self.prefix + "delayed"

    @property
    def jobs(self) -> str:
        """Hash: job id -> job record (header and producer blob)."""
        return self.prefix + "jobs"

    @property
    def wake(self) -> str:
        """Sorted set used as a marker: set when a new earliest job arrives (BZPOPMIN)."""
        return self.prefix + "wake"

    @property
    def counts(self) -> str:
        """Hash: topic -> number of delayed jobs; its fields are the known topics."""
        return self.prefix + "counts"

    @property
    def groups(self) -> str:
        """Hash: topic -> the consumer group that serves it."""
        return self.prefix + "groups"

    @property
    def done(self) -> str:
        """Sorted set: job id -> tombstone expiry (epoch ms), used when ``keep_done`` > 0."""
        return self.prefix + "done"

    @property
    def meta(self) -> str:
        """Hash of queue-wide settings every process must agree on (``partitions``, and the
        record ``layout``: docs/keys.md#layouts)."""
        return self.prefix + "meta"

    @property
    def fleet(self) -> str:
        """Hash: consumer -> the highest record layout it reads and until when it counts as
        live (partition 0's only, for the whole queue; docs/keys.md#fleet)."""
        return self.prefix + "fleet"

    @property
    def workers(self) -> str:
        """Hash: consumer -> ``<live until ms>|<renewed ms>|<what it is, JSON>`` (partition 0's
        only, written with the fleet entry; docs/keys.md#fleet, docs/operations.md#workers)."""
        return self.prefix + "workers"

    @property
    def commands(self) -> str:
        """Hash: worker -> ``<quiet|stop>|<its process's started ms>|<until ms>`` (partition 0's
        only, written by ``commandWorker``; docs/operations.md#quiet-and-stop)."""
        return self.prefix + "commands"

    @property
    def paused(self) -> str:
        """Hash: paused topic -> since when (epoch ms); the queue's is partition 0's."""
        return self.prefix + "paused"

    @property
    def schedules(self) -> str:
        """Hash: schedule name -> schedule record (docs/schedules.md#storage)."""
        return self.prefix + "sched"

    @property
    def schedule_next(self) -> str:
        """Sorted set: active schedule name -> its next tick not yet enqueued (epoch ms)."""
        return self.prefix + "sched:next"

    @property
    def limits(self) -> str:
        """Hash: limited topic -> ``count|per_ms|concurrency``; the queue's is partition 0's."""
        return self.prefix + "limits"

    def bucket(self, topic: str) -> str:
        """Hash ``tokens``, ``ts``: the token bucket of a topic's rate limit (docs/limits.md)."""
        return self.prefix + "bucket:" + topic

    def leases(self, topic: str) -> str:
        """Sorted set: stream entry id -> lease expiry (ms), one per running job of a topic with
        a concurrency limit."""
        return self.prefix + "leases:" + topic

    def limit_wake(self, topic: str) -> str:
        """List: one element per freed lease of a topic, for waiting workers (BLPOP)."""
        return self.prefix + "limitwake:" + topic

    @property
    def key_limits(self) -> str:
        """Hash: topic -> ``count|per_ms|concurrency`` held by each of its fairness keys
        (docs/limits.md#key-limits); in every partition."""
        return self.prefix + "keylimits"

    @property
    def ready(self) -> str:
        """Hash: staged topic -> jobs ready in its lanes (docs/priorities.md#storage)."""
        return self.prefix + "ready"

    def stage_wake(self, topic: str) -> str:
        """List: one element per new ready job batch or freed key lease of a staged topic, for
        waiting takers (BLPOP)."""
        return self.prefix + "stagewake:" + topic

    def backlog(self, topic: str) -> str:
        """Sorted set: fairness key -> its jobs ready in a staged topic's lanes (``''``: the
        jobs without a key)."""
        return self.prefix + "backlog:" + topic

    def lanes(self, topic: str) -> str:
        """Sorted set: key -> turn, the lanes of a staged topic that may go (round robin)."""
        return self.prefix + "lanes:" + topic

    def lane(self, topic: str, key: str) -> str:
        """Sorted set: job id -> rank, the ready jobs of one key of a staged topic."""
        return self.prefix + "rq:" + topic + "|" + key

    @property
    def lateness(self) -> str:
        """The base of the lateness record: ``lateness:<minute>`` hashes hold the counts,
        ``lateness:seen:<minute>`` the flushes applied (partition 0's only, for the whole
        queue; docs/dashboard.md#lateness)."""
        return self.prefix + "lateness"

    @property
    def opts(self) -> str:
        """Hash: job id -> ``<priority>|<deadline_ms>|<key>``, only for jobs enqueued with a
        priority, a fairness key or an expiry (docs/keys.md#job-options)."""
        return self.prefix + "opts"

    @property
    def staged(self) -> str:
        """Hash: topic -> 1 for a topic that ever had a job with a priority other than 5 or a
        fairness key; partition 0's is the queue's flag (docs/keys.md#job-options)."""
        return self.prefix + "staged"

    @property
    def events(self) -> str:
        """Stream of lifecycle events of this partition's jobs, when the queue keeps them
        (field ``events`` of ``meta``: its bound; docs/events.md)."""
        return self.prefix + "events"

    def stream(self, topic: str) -> str:
        """Stream of one topic: ready and reserved jobs."""
        return self.prefix + "t:" + topic

    def dead(self, topic: str) -> str:
        """Dead-letter stream of one topic."""
        return self.prefix + "dead:" + topic

    def script_keys(self) -> tuple[str, str, str, str, str, str]:
        """The six KEYS every script of this partition receives, in order."""
        return (self.delayed, self.jobs, self.wake, self.counts, self.groups, self.done)


def partition_keys(queue: str, partitions: int) -> tuple[PartitionKeys, ...]:
    """Keys of every partition of ``queue``."""
    return tuple(PartitionKeys(queue, p) for p in range(partitions))


def partition_of(job_id: str, partitions: int) -> int:
    """Stable partition of a job id: CRC-32 of its UTF-8 bytes modulo the partition count.

    An id of the form ``<name>@<digits>`` (a schedule's tick) is placed by ``<name>`` alone, so
    every tick of a schedule shares its schedule's partition; an id of the form ``{<key>}<rest>``
    (a job with a fairness key) by ``<key>`` alone, so every job of a key shares one partition
    (docs/keys.md#partitions).
    """
    if partitions == 1:
        return 0
    return zlib.crc32(placement_name(job_id).encode()) % partitions


def placement_name(job_id: str) -> str:
    """The part of a job id that picks its partition: ``key`` for ``{key}<rest>``, ``name`` for
    ``name@<digits>``, else all."""
    if job_id.startswith("{"):
        close = job_id.find("}", 2)
        if close > 0:
            return job_id[1:close]
    name, at, tail = job_id.rpartition("@")
    if at and name and tail.isdigit() and tail.isascii():
        return name
    return job_id
