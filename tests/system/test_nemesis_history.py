"""Histories of real processes (docs/reliability.md#histories). A history file survives a
kill -9 of its writer: a process records operations as fast as it can and says on stdout which
it recorded; it is killed with SIGKILL mid-stream, and every record it had reported is read
back, the rest of the file parses (a torn last line skipped), and the same process name
restarted appends after it. And the checker reads a real overlap of two workers' runs as the
docs allow it: only by the cut-off that caused it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

import streamdelay as sd
from tests.system.nemesis.history import Allowances, Recorder, check, format_report, load
from tests.system.nemesis.timeline import timeline

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
WRITER = """
import os, sys
from pathlib import Path
from tests.system.nemesis.history import Recorder
rec = Recorder(Path(sys.argv[1]), "writer")
payload = "x" * int(sys.argv[2])
i = 0
while True:
    seq = rec.invoke("enqueue", f"j{i}", payload=payload)
    os.write(1, f"i{seq}\\n".encode())
    rec.complete(seq, "ok", due_ms=i)
    os.write(1, f"c{seq}\\n".encode())
    i += 1
"""

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("payload", "kill_after"), [(10, 400), (200_000, 15)])
def test_a_writer_killed_with_sigkill_loses_no_record_it_had_written(
        tmp_path: Path, payload: int, kill_after: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(payload)],
                             cwd=ROOT, stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    reported: list[str] = []
    for line in child.stdout:
        reported.append(line.decode().strip())
        if len(reported) >= kill_after:
            break
    child.send_signal(signal.SIGKILL)
    reported += [line.decode().strip() for line in child.stdout]  # the pipe's rest
    assert child.wait() == -signal.SIGKILL

    records = load(tmp_path)
    have = {(("i" if r.phase == "invoke" else "c") + str(r.seq)) for r in records}
    assert set(reported) <= have  # everything reported written is there
    invokes = sorted(r.seq for r in records if r.phase == "invoke")
    assert invokes == list(range(len(invokes)))  # no gap, no duplicate
    assert len(invokes) - sum(x.startswith("i") for x in reported) <= 1  # written, unreported
    assert all(r.fields["payload"] == "x" * payload for r in records if r.phase == "invoke")

    again = Recorder(tmp_path, "writer")  # restarted under the same name: appends after
    seq = again.invoke("enqueue", "after-restart")
    again.complete(seq, "unknown", error="test")
    assert seq == invokes[-1] + 1
    tail = [r for r in load(tmp_path) if r.job == "after-restart"]
    assert [r.phase for r in tail] == ["invoke", "unknown"]


SLOW_WORKER = """
import asyncio, os, sys
from pathlib import Path
import streamdelay as sd
from tests.system.nemesis.history import Recorder
url, name, out, who = sys.argv[1:5]
worker = sd.Worker(sd.Queue(name, url=url, ttr=1.0), concurrency=2, reclaim_interval=0.2,
                   shutdown_grace=1)
record = Recorder(Path(out), f"worker-{who}-{os.getpid()}")
me = f"{who}:{os.getpid()}"

@worker.handler("slow")
async def slow(job):
    record.note("start", job.id, attempt=job.attempt, worker=me, due_ms=job.due,
                ready_ms=int(job.entry_id.split("-")[0]))
    await asyncio.sleep(float(job.body["seconds"]))
    record.note("end", job.id, attempt=job.attempt, worker=me, outcome="ok", value=job.attempt)
    return job.attempt

worker.run()
"""
STOP_S = 6.0  # far past the ttr (1 s): the other worker takes the job meanwhile


def _wait(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := probe()) is not None:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout} s")


def test_the_checker_excuses_a_real_overlap_only_by_the_cut_off_that_caused_it(
        redis_url: str, queue_name: str, tmp_path: Path) -> None:
    """Two real workers (ttr 1 s); the one running a 2 s job is frozen (SIGSTOP) for 6 s, so
    the other runs the job again beside it. The history shows both runs overlapping; with the
    SIGSTOP noted as a fault the checker allows it (docs/guarantees.md#never-twice-at-once:
    cut off past 2/3 ttr - 0.3 s); without it, or with no allowance, it is an overlap whose
    slice is the job's records (and the fault)."""
    workers = {who: subprocess.Popen(
        [sys.executable, "-c", SLOW_WORKER, redis_url, queue_name, str(tmp_path), who],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}) for who in ("a", "b")}
    nemesis, producer = Recorder(tmp_path, "nemesis"), Recorder(tmp_path, "producer")
    queue = sd.Queue(queue_name, url=redis_url, ttr=1.0)
    try:
        seq = producer.invoke("enqueue", "j", delay_ms=0)
        done = queue.enqueue("slow", {"seconds": 2}, id="j")
        producer.complete(seq, "ok", due_ms=done.due, created=done.created)
        first = _wait("start of j", lambda: next(
            (r for r in load(tmp_path) if r.kind == "start"), None))
        who = str(first.fields["worker"]).split(":")[0]
        nemesis.note("fault", phase="begin", name="stop", target=who)
        workers[who].send_signal(signal.SIGSTOP)
        time.sleep(STOP_S)
        workers[who].send_signal(signal.SIGCONT)
        nemesis.note("fault", phase="end", name="stop", target=who)
        _wait("two ends of j", lambda: (
            True if sum(r.kind == "end" for r in load(tmp_path)) >= 2 else None))
    finally:
        queue.close()
        for process in workers.values():
            process.send_signal(signal.SIGCONT)
            process.terminate()
        for process in workers.values():
            process.wait(30)

    records = load(tmp_path)
    runs = sorted(timeline(records).runs["j"], key=lambda r: r.start_ms)
    assert len(runs) == 2 and runs[1].start_ms < runs[0].end_ms, runs  # they did overlap
    assert runs[0].worker != runs[1].worker
    allow = Allowances.from_docs(1000)  # a cut-off past 367 ms may lose the job
    assert check(records, allow) == []
    unexcused = check([r for r in records if r.kind != "fault"], allow)
    assert [v.rule for v in unexcused] == ["overlap"], format_report(unexcused)
    assert sorted(map(id, unexcused[0].slice)) == sorted(
        id(r) for r in records if r.job == "j")
    strict = check(records, Allowances(ttr_ms=1000,
                                       overlap_allowed_when_cutoff_longer_than_ms=None))
    assert [v.rule for v in strict] == ["overlap"]
    assert sum(r.kind == "fault" for r in strict[0].slice) == 2
