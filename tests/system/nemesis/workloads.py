"""The producers of the nemesis run (docs/reliability.md#make-nemesis): processes that use the
public API (``sd.Queue``) while the nemesis injects faults, and record every operation in the
run's history (``tests/system/nemesis/history.py``) as invoked, then ``ok``, ``fail`` (refused:
nothing was written) or ``unknown`` (a timeout or a connection error once the call may have been
sent: it may or may not have happened).

``python -m tests.system.nemesis.workloads URL QUEUE OUT NAME WORKLOAD SEED SECONDS`` runs one
producer of ``WORKLOAD`` for ``SECONDS``:

- ``plain``: delayed jobs (0.1-3 s), some cancelled and some rescheduled while they wait;
- ``retry``: jobs whose handler fails their first attempt (half of them);
- ``keyed``: jobs with priorities 0-9 and 4 fairness keys, the topic held to one running job
  per key (``key_concurrency=1``, set by the runner);
- ``flows``: workflows: fan-in (a child after 3 parents), chains of 3, batches of 4 with
  ``on_success`` and ``on_complete`` callbacks; the ids of each chain and batch written to
  ``OUT/flows-NAME.jsonl`` for the checker;
- ``prio``: bursts of 8 jobs of topic ``prio`` due at one time with priorities 0-9 and no key
  (one lane per partition): the priority rule (priorities.py) judges the order they were taken;
- ``dense``: bursts of 40 jobs due 1 ms apart (``at=``), so every promotion has a job due in the
  next ms: a promotion 1 ms early shows (checker.py, ``promoted_early``);
- ``http``: jobs of topic ``http``, consumed over HTTP (tests/system/nemesis/http_consumer.py),
  each result awaited over HTTP through ``serve`` (``GET .../jobs/{id}/result?wait_ms=``:
  ``http_result_wait`` operations and ``result`` notes);
- ``results``: jobs whose handler returns a value, each awaited with ``result(timeout=)`` by
  this process (``result_wait`` operations and ``result`` notes).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import streamdelay as sd
from tests.system.nemesis.app import queue_for
from tests.system.nemesis.history import Recorder, now_ms

WORKLOADS = ("plain", "retry", "keyed", "prio", "dense", "flows", "http", "results")
SERVE_ENV, TOKEN_ENV = "NEMESIS_SERVE", "NEMESIS_TOKEN"  # where ``serve`` is (fleet.py)
REPLICAS_ENV = "NEMESIS_REPLICAS"  # the producers' ``replicas=`` (the Sentinel run: 1)
PRIO_BURST = 8
DENSE_BURST = 40
KEYS = 4
REFUSED = (sd.ValidationError, sd.ConfigError)  # refused before anything was sent
RESULT_WAIT_S = 30.0
# Producers give up on a call after 1 s of connection trouble (the default is 5 s), so a Redis
# restart or a stop leaves operations whose outcome is unknown: the checker must cope with them.
RETRY_FOR_S = 1.0


def answered(result: sd.EnqueueResult) -> dict[str, Any]:
    """What an enqueue answered, as the history records it. ``created=False`` answers the
    due time the job that already had the id has now (a retry of a call whose first write
    went through answers so, and by then that job may have failed an attempt and be due again
    after its backoff): not a due time this call set, so it is not the ``due_ms`` the checker
    judges runs by (it then takes the invoke time plus the delay asked, a lower bound)."""
    if result.created:
        return {"due_ms": result.due, "created": True}
    return {"created": False, "existing_due_ms": result.due}


class Producer:
    """One producer process: a queue, a recorder and a random source."""

    def __init__(self, url: str, queue: str, out: Path, name: str, seed: int) -> None:
        self.queue = queue_for(url, queue, retry_for=RETRY_FOR_S)
        replicas = int(os.environ.get(REPLICAS_ENV, "0"))
        if replicas:  # answered only once a replica has it (docs/guarantees.md)
            self.queue = self.queue.with_replicas(replicas, replica_timeout=1.0)
        self.queue_name = queue
        self.record = Recorder(out, f"producer-{name}")
        self.flow_log = (out / f"flows-{name}.jsonl").open("a", buffering=1)
        self.name, self.rng, self.count = name, random.Random(seed), 0
        self.waiters = ThreadPoolExecutor(4)

    def next_id(self, tag: str) -> str:
        """A job id no other producer uses."""
        self.count += 1
        return f"{self.name}-{tag}{self.count}"

    def operate(self, kind: str, job: str | None, call: Callable[[], Any],
                done: Callable[[Any], dict[str, Any]], **fields: Any) -> Any:
        """Record ``kind`` invoked, run ``call``, record how it ended; its answer (None unless
        it was ok)."""
        seq = self.record.invoke(kind, job, **fields)
        try:
            answer = call()
        except REFUSED as exc:
            self.record.complete(seq, "fail", error=f"{type(exc).__name__}: {exc}")
            return None
        except Exception as exc:  # timeout, connection lost, Redis restarting: maybe done
            self.record.complete(seq, "unknown", error=f"{type(exc).__name__}: {exc}")
            return None
        self.record.complete(seq, "ok", **done(answer))
        return answer

    def enqueue(self, topic: str, body: Any, job: str, delay: float | None,
                **options: Any) -> bool:
        """One recorded enqueue (``delay`` None: ``at=`` is among the options, its due time
        recorded as ``at_ms``); True when it was acknowledged."""
        extra = {k: v for k, v in options.items() if k in ("priority", "key", "after")}
        if delay is None:
            extra["at_ms"] = options["at"] * 1000
        else:
            options["delay"] = delay
            extra["delay_ms"] = delay * 1000
        answer = self.operate(
            "enqueue", job, lambda: self.queue.enqueue(topic, body, id=job.split("}")[-1],
                                                       **options),
            answered, topic=topic, **extra)
        return answer is not None

    def group(self, kind: str, jobs: list[str], call: Callable[[], Any], topic: str,
              **fields: Any) -> bool:
        """A call that enqueues ``jobs`` at once (a chain, a batch): each job's enqueue is
        recorded invoked before it and ended as it ended; True when it was acknowledged."""
        seqs = [self.record.invoke("enqueue", job, topic=topic, delay_ms=0, **fields)
                for job in jobs]
        try:
            answer = call()
        except Exception as exc:
            phase: Literal["fail", "unknown"] = (
                "fail" if isinstance(exc, REFUSED) else "unknown")
            for seq in seqs:
                self.record.complete(seq, phase, error=f"{type(exc).__name__}: {exc}")
            return False
        # a chain answers each link's EnqueueResult; a batch its BatchInfo (members due at once)
        links = answer if kind == "chain" else [None] * len(jobs)
        for seq, link in zip(seqs, links, strict=True):
            self.record.complete(seq, "ok", **(answered(link) if link is not None else
                                               {"created": True}))
        return True

    # --- the workloads -------------------------------------------------------------------

    def plain(self) -> None:
        """A delayed job; now and then cancel or reschedule an earlier one."""
        job = self.next_id("p")
        if not self.enqueue("plain", {"n": self.count}, job, self.rng.uniform(0.1, 3.0)):
            return
        roll = self.rng.random()
        if roll < 0.1:
            self.operate("cancel", job, lambda: self.queue.cancel(job),
                         lambda found: {"cancelled": bool(found)})
        elif roll < 0.2:
            delay = self.rng.uniform(0.5, 3.0)
            invoked = now_ms()
            self.operate("reschedule", job, lambda: self.queue.reschedule(job, delay=delay),
                         lambda found: {"found": bool(found), "due_ms": invoked + delay * 1000},
                         delay_ms=delay * 1000)

    def retry(self) -> None:
        """A job whose first attempt fails half of the time."""
        fail = self.rng.random() < 0.5
        self.enqueue("retry", {"fail_first": fail}, self.next_id("r"),
                     self.rng.uniform(0.1, 2.0), backoff=[0.2])

    def keyed(self) -> None:
        """A job with a priority and a fairness key (the key's jobs one at a time)."""
        key = f"k{self.rng.randrange(KEYS)}"
        job = "{" + key + "}" + self.next_id("k")
        self.enqueue("keyed", None, job, self.rng.uniform(0.0, 1.0),
                     priority=self.rng.randrange(10), key=key)

    def flows(self) -> None:
        """A fan-in, a chain or a batch."""
        shape = self.rng.choice(("fan_in", "chain", "batch"))
        tag = self.next_id(shape[0])
        if shape == "fan_in":
            parents = [f"{tag}.p{i}" for i in range(3)]
            if not all([self.enqueue("flow", None, p, self.rng.uniform(0.1, 1.5))
                        for p in parents]):
                return
            child = f"{tag}.c"
            if self.enqueue("flow", None, child, 0.0, after=parents):
                for i, parent in enumerate(parents):
                    self.write_flow("chain", f"{tag}/{i}", [parent, child])
        elif shape == "chain":
            links = [f"{tag}.{i}" for i in range(3)]
            specs = [sd.JobSpec("flow", None, id=link) for link in links]
            if self.group("chain", links, lambda: self.queue.chain(specs), "flow", chain=tag):
                self.write_flow("chain", tag, links)
        else:
            members = [f"{tag}.{i}" for i in range(4)]
            specs = [sd.JobSpec("flow", None, id=m) for m in members]
            if self.group("batch", members, lambda: self.queue.batch(
                    specs, id=tag, on_success=sd.JobSpec("callback", {"batch": tag}),
                    on_complete=sd.JobSpec("callback", {"batch": tag})), "flow", batch=tag):
                self.write_flow("batch", tag, members)

    def prio(self) -> None:
        """A burst of jobs due at one time, priorities drawn from 0-9, no key; then a pause
        so bursts rarely mix."""
        at = time.time() + self.rng.uniform(0.3, 1.0)
        for _ in range(PRIO_BURST):
            self.enqueue("prio", None, self.next_id("q"), None, at=at,
                         priority=self.rng.randrange(10))
        time.sleep(self.rng.uniform(0.3, 1.0))

    def dense(self) -> None:
        """A burst of jobs due one ms apart (the broken-promotion check: a job is due in the
        ms after each promotion)."""
        at = time.time() + self.rng.uniform(0.3, 1.0)
        for i in range(DENSE_BURST):
            self.enqueue("dense", None, self.next_id("d"), None, at=at + i / 1000)
        time.sleep(self.rng.uniform(0.2, 0.6))

    def write_flow(self, kind: str, name: str, jobs: list[str]) -> None:
        """Tell the checker about an acknowledged chain or batch."""
        self.flow_log.write(json.dumps({"kind": kind, "name": name, "jobs": jobs}) + "\n")

    def http(self) -> None:
        """A job for the HTTP consumers, its result awaited over HTTP (in a thread)."""
        job = self.next_id("h")
        n = self.count
        if self.enqueue("http", {"n": n}, job, self.rng.uniform(0.1, 2.0)):
            self.waiters.submit(self.await_http_result, job, n * 3)

    def await_http_result(self, job: str, expected: int) -> None:
        """``GET .../jobs/{id}/result?wait_ms=`` through ``serve`` until it answers 200 (a 204
        is asked again; ``serve`` down or cut off is retried) or ``RESULT_WAIT_S`` pass:
        recorded as an ``http_result_wait`` operation, what it answered as a ``result`` note."""
        base, token = os.environ[SERVE_ENV], os.environ[TOKEN_ENV]
        url = f"{base}/v1/queues/{self.queue_name}/jobs/{job}/result?wait_ms=5000"
        seq = self.record.invoke("http_result_wait", job, expected=expected)
        deadline = time.monotonic() + RESULT_WAIT_S
        while time.monotonic() < deadline:
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    status, payload = answer.status, answer.read()
            except urllib.error.HTTPError as exc:
                status, payload = exc.code, b""
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
                continue
            if status == 200:
                data = json.loads(payload)
                self.record.complete(seq, "ok", state=data.get("state"), value=data.get("value"))
                self.record.note("result", job, state=data.get("state"), value=data.get("value"),
                                 expected=expected, via="http")
                return
            time.sleep(0.2 if status != 204 else 0)
        self.record.complete(seq, "unknown", error=f"no result in {RESULT_WAIT_S:g} s")

    def results(self) -> None:
        """A job whose value this process awaits (in a thread: enqueuing goes on)."""
        job = self.next_id("v")
        n = self.count
        if self.enqueue("result", {"n": n}, job, self.rng.uniform(0.1, 2.0)):
            self.waiters.submit(self.await_result, job, n * 2)

    def await_result(self, job: str, expected: int) -> None:
        """``result(timeout=)`` recorded as an operation, and what it answered as a note."""
        answer = self.operate(
            "result_wait", job, lambda: self.queue.result(job, timeout=RESULT_WAIT_S),
            lambda r: {"state": None if r is None else r.state,
                       "value": None if r is None else r.value}, expected=expected)
        if answer is not None:
            self.record.note("result", job, state=answer.state, value=answer.value,
                             expected=expected)


def run(url: str, queue: str, out: Path, name: str, workload: str, seed: int,
        seconds: float) -> None:
    """Run one workload for ``seconds``, then wait for its result waits."""
    producer = Producer(url, queue, out, name, seed)
    step: Callable[[], None] = getattr(producer, workload)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        step()
        time.sleep(producer.rng.uniform(0.02, 0.12))
    producer.waiters.shutdown(wait=True)
    producer.queue.close()


if __name__ == "__main__":
    if sys.argv[5] not in WORKLOADS:
        sys.exit(f"unknown workload {sys.argv[5]!r} (known: {', '.join(WORKLOADS)})")
    run(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4], sys.argv[5],
        int(sys.argv[6]), float(sys.argv[7]))
