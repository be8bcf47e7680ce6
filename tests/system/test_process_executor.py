"""The process executor against real processes (docs/worker.md#executors): a CLI worker with
``--processes 2`` runs handlers in two spawned children and returns their results; a child
killed with SIGKILL, or ending with ``os._exit``, fails only its job's attempt (the error names
the signal or the exit code), the next attempt runs and the pool has two children again; a
``handler_timeout`` kills a child stuck in ``while True``; ``max_jobs_per_child`` replaces
children; the worker's death takes its children with it; bad settings are refused by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from tests.support.redis_server import wait_until
from tests.system import test_docs_examples as docs_examples

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.support.apps.process_worker_app:worker"
pytestmark = pytest.mark.timeout(150)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the example
run_example = docs_examples.run_example


def children(pid: int) -> set[int]:
    """The handler processes of the worker ``pid``: its children started by ``spawn``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next(int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("PPid:"))
        if ppid == pid and b"spawn_main" in cmdline:
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


class AppWorker:
    """A ``streamdelay worker`` subprocess of the test app, its start lines and its log."""

    def __init__(self, url: str, queue: str, tmp: Path, *extra: str, **env: str) -> None:
        self.out = tmp / "starts.txt"
        self.out.touch()
        self.log = (tmp / "worker.log").open("w+")
        environ = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDELAY_")}
        environ.update(PYTHONPATH=str(ROOT), PE_QUEUE=queue, PE_OUT=str(self.out), **env)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamdelay", "worker", APP, "--url", url, *extra],
            cwd=ROOT, env=environ, stdout=self.log, stderr=subprocess.STDOUT)

    def starts(self) -> list[tuple[str, int, int]]:
        """``(job id, attempt, pid)`` of each handler run begun so far."""
        lines = self.out.read_text().splitlines()
        return [(p[1], int(p[2]), int(p[3])) for p in (line.split() for line in lines)
                if p[0] == "start"]

    def started(self, job_id: str, attempt: int, timeout: float = 60) -> int:
        """Wait for that attempt of that job to begin; the pid of the child running it."""
        assert wait_until(lambda: any(s[:2] == (job_id, attempt) for s in self.starts()),
                          timeout), self.text()
        return next(s[2] for s in self.starts() if s[:2] == (job_id, attempt))

    def children(self, count: int, timeout: float = 60) -> set[int]:
        """Wait until the worker has ``count`` handler processes; their pids."""
        assert wait_until(lambda: len(children(self.proc.pid)) == count, timeout), self.text()
        return children(self.proc.pid)

    def text(self) -> str:
        """The worker's log so far."""
        self.log.flush()
        return Path(self.log.name).read_text()

    def stop(self) -> None:
        """SIGTERM, then wait for the exit (killed after 30 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def queue(redis_url: str, queue_name: str) -> Iterator[sd.Queue]:
    """The app's queue (events on: an attempt's error is read from its event)."""
    q = sd.Queue(queue_name, url=redis_url, events=True)
    yield q
    q.close()


@pytest.fixture
def app(redis_url: str, queue: sd.Queue, tmp_path: Path) -> Iterator[AppWorker]:
    """The app's worker with two handler processes."""
    worker = AppWorker(redis_url, queue.name, tmp_path, "--processes", "2")
    yield worker
    worker.stop()


def result(queue: sd.Queue, job_id: str, app: AppWorker, timeout: float = 60) -> sd.JobResult:
    """The job's result, once it ended (else the worker's log and the job's events)."""
    try:
        found = queue.result(job_id, timeout=timeout)
        assert found is not None, f"{job_id}: no such job"
        return found
    except sd.ResultTimeout:
        events = [(e.kind, e.attempt, e.detail) for e in queue.events(follow=False)
                  if e.id == job_id]
        pytest.fail(f"no result for {job_id}: {events}\n{app.text()}")


def event_detail(queue: sd.Queue, job_id: str, kind: str, attempt: int) -> str:
    """The detail of one event of the job."""
    return next(e.detail for e in queue.events(follow=False)
                if (e.id, e.kind, e.attempt) == (job_id, kind, attempt))


def test_two_children_run_the_handlers_and_return_results(app: AppWorker, queue: sd.Queue
                                                          ) -> None:
    pool = app.children(2)
    assert app.proc.pid not in pool
    for n in range(6):
        queue.enqueue("pe.work", {"n": n, "sleep": 0.3}, id=f"w{n}", keep_result=600)
    queue.enqueue("pe.async", {}, id="a1", keep_result=600)
    values = [result(queue, f"w{n}", app).value for n in range(6)]
    assert [v["n"] for v in values] == list(range(6))  # results crossed the boundary
    assert {v["pid"] for v in values} <= pool  # every job ran in a child, none in the worker
    assert result(queue, "a1", app).value in pool  # an async def handler too
    assert {pid for _, _, pid in app.starts()} <= pool


def test_kill_9_of_a_child_fails_only_its_attempt(app: AppWorker, queue: sd.Queue) -> None:
    pool = app.children(2)
    queue.enqueue("pe.work", {"n": 1, "first_sleep": 60}, id="victim", keep_result=600)
    pid = app.started("victim", 1)
    assert pid in pool
    queue.enqueue("pe.work", {"n": 2, "sleep": 0.5}, id="bystander", keep_result=600)
    app.started("bystander", 1)
    os.kill(pid, signal.SIGKILL)
    assert result(queue, "victim", app).state == "succeeded"  # the next attempt ran
    assert result(queue, "bystander", app).value["n"] == 2  # the other child's job was untouched
    detail = event_detail(queue, "victim", "retried", 1)
    assert "SIGKILL" in detail and str(pid) in detail, detail
    assert [s[1] for s in app.starts() if s[0] == "bystander"] == [1]
    now = app.children(2)  # replaced
    assert pid not in now and not alive(pid)


def test_os_exit_in_a_handler_names_the_exit_code(app: AppWorker, queue: sd.Queue) -> None:
    app.children(2)
    queue.enqueue("pe.exit", {}, id="quitter", keep_result=600)
    value = result(queue, "quitter", app).value
    first = app.started("quitter", 1)
    assert value != first  # attempt 2 ran in another child
    assert "exited with code 3" in event_detail(queue, "quitter", "retried", 1)
    assert first not in app.children(2)


def test_a_segfault_fails_only_its_attempt(app: AppWorker, queue: sd.Queue) -> None:
    app.children(2)
    queue.enqueue("pe.segfault", {}, id="crasher", keep_result=600)
    assert result(queue, "crasher", app).state == "succeeded"
    assert "killed by SIGSEGV" in event_detail(queue, "crasher", "retried", 1)


def test_handler_timeout_kills_a_child_stuck_in_while_true(app: AppWorker, queue: sd.Queue
                                                           ) -> None:
    app.children(2)
    queue.enqueue("pe.spin", {}, id="spinner", keep_result=600)
    stuck = app.started("spinner", 1)
    begun = time.monotonic()
    assert result(queue, "spinner", app).state == "succeeded"  # attempt 2 returns
    assert time.monotonic() - begun < 60
    assert "HandlerTimeout: handler ran longer than handler_timeout=2s" in event_detail(
        queue, "spinner", "retried", 1)
    assert not alive(stuck)  # a thread would spin on; the child was killed
    assert stuck not in app.children(2)


def test_a_handler_error_keeps_its_text_and_frames(app: AppWorker, queue: sd.Queue) -> None:
    queue.enqueue("pe.fail", {"n": 7}, id="unlucky", max_attempts=1)
    assert wait_until(lambda: queue.dead_list(), 60)
    (dead,) = queue.dead_list()
    assert dead.error.startswith("ValueError: no luck for 7\n"), dead.error
    assert "process_worker_app.py" in dead.error  # the child's frames, not the worker's


def test_max_jobs_per_child_replaces_children(redis_url: str, queue: sd.Queue, tmp_path: Path
                                              ) -> None:
    app = AppWorker(redis_url, queue.name, tmp_path, "--processes", "2", PE_MAX_JOBS="2")
    try:
        first = app.children(2)
        for n in range(8):
            queue.enqueue("pe.work", {"n": n, "sleep": 0.05}, id=f"r{n}", keep_result=600)
        pids = [result(queue, f"r{n}", app).value["pid"] for n in range(8)]
        assert max(pids.count(pid) for pid in pids) <= 2  # each child ran 2 jobs at most
        assert len(set(pids)) >= 4
        assert len(app.children(2) & first) == 0  # the first two were retired, two run now
    finally:
        app.stop()


def test_children_die_with_a_killed_worker(app: AppWorker, queue: sd.Queue) -> None:
    pool = app.children(2)
    queue.enqueue("pe.work", {"first_sleep": 60}, id="orphan")
    app.started("orphan", 1)
    app.proc.kill()
    app.proc.wait()
    assert wait_until(lambda: not any(alive(pid) for pid in pool), 10)  # no handler runs on


def test_a_graceful_stop_kills_an_unfinished_child_and_hands_its_job_back(
        app: AppWorker, queue: sd.Queue) -> None:
    pool = app.children(2)
    queue.enqueue("pe.work", {"first_sleep": 60}, id="long")
    pid = app.started("long", 1)
    app.stop()  # shutdown_grace=5: the child is killed, the job handed back
    assert app.proc.returncode == 0, app.text()
    assert not any(alive(p) for p in pool)
    info = queue.get("long")
    assert info is not None and info.state in ("ready", "delayed"), info
    assert not alive(pid)


def test_bad_settings_are_refused_by_name(queue: sd.Queue) -> None:
    cases = [({"executor": "process", "processes": 0}, "processes"),
             ({"executor": "fork"}, "executor"),
             ({"processes": 2}, "processes"),
             ({"max_jobs_per_child": 5}, "max_jobs_per_child"),
             ({"executor": "process", "max_jobs_per_child": 0}, "max_jobs_per_child")]
    for options, field in cases:
        with pytest.raises(ValueError, match=f"^{field}: ") as raised:
            sd.Worker(queue, **options)  # type: ignore[arg-type]
        assert isinstance(raised.value, sd.ValidationError) and raised.value.field == field
    done = subprocess.run([sys.executable, "-m", "streamdelay", "worker", APP, "--processes",
                           "0"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and "--processes" in done.stderr, done.stderr


def test_docs_example_runs(example_env: dict[str, str]) -> None:
    out = run_example("process_worker.py", example_env, timeout=120).splitlines()
    assert out[:4] == ["primes-20k: 2262", "primes-30k: 3245", "stuck-1: done on attempt 2",
                       "crash-1: done on attempt 2"]
    assert out[4].startswith("counts: {'handled': 4, 'retried': 2, 'dead': 0")


def test_abort_terminates_the_child_running_the_job(app: AppWorker, queue: sd.Queue) -> None:
    pool = app.children(2)
    queue.enqueue("pe.abortable", {}, id="endless", keep_result=600)
    pid = app.started("endless", 1)
    asked = time.monotonic()
    assert queue.cancel("endless", abort=True)
    assert wait_until(lambda: "cleanup endless 1" in app.out.read_text(), 30), app.text()
    assert wait_until(lambda: not alive(pid), 30)  # SIGTERM: the handler's finally ran, it ended
    latency = time.monotonic() - asked
    done = result(queue, "endless", app)
    assert (done.state, done.error) == ("cancelled", "aborted")
    assert latency < 15, latency  # about 1 s promised; a loaded shared host gets slack
    assert pid not in app.children(2) and len(pool) == 2
    assert [s[1] for s in app.starts() if s[0] == "endless"] == [1]  # never retried


def test_abort_kills_a_handler_that_ignores_sigterm_after_abort_grace(
        app: AppWorker, queue: sd.Queue) -> None:
    app.children(2)
    queue.enqueue("pe.stubborn", {}, id="stubborn")
    pid = app.started("stubborn", 1)
    assert queue.cancel("stubborn", abort=True)
    assert wait_until(lambda: "ignored stubborn 1" in app.out.read_text(), 30), app.text()
    assert wait_until(lambda: not alive(pid), 30)  # abort_grace=1: then SIGKILL
    assert pid not in app.children(2)
    assert queue.get("stubborn") is None


def test_checkpoints_and_snooze_cross_the_boundary(app: AppWorker, queue: sd.Queue) -> None:
    queue.enqueue("pe.resume", {}, id="resumable", keep_result=600, max_attempts=5)
    done = result(queue, "resumable", app)
    # a snooze spends no attempt; the failure after it does; each run read the last checkpoint
    assert done.value == {"attempt": 2, "seen": {"step": 2}}, done
    assert [s[1] for s in app.starts() if s[0] == "resumable"] == [1, 1, 2]


def test_an_abort_of_a_job_waiting_for_a_child_never_starts_it_and_frees_its_slot(
        redis_url: str, queue: sd.Queue, tmp_path: Path) -> None:
    app = AppWorker(redis_url, queue.name, tmp_path, "--processes", "1")  # 2 slots
    try:
        (pid,) = app.children(1)
        queue.enqueue("pe.work", {"first_sleep": 120}, id="busy")
        app.started("busy", 1)

        def state(job_id: str) -> str | None:
            info = queue.get(job_id)
            return None if info is None else info.state

        queue.enqueue("pe.work", {"n": 2}, id="waiting", keep_result=600)
        assert wait_until(lambda: state("waiting") == "reserved", 30), app.text()  # read
        assert queue.cancel("waiting", abort=True)
        done = result(queue, "waiting", app)
        assert (done.state, done.error) == ("cancelled", "aborted")
        queue.enqueue("pe.work", {"n": 3}, id="next")
        # its slot is free again while the only child still runs "busy": the next job is read
        assert wait_until(lambda: state("next") == "reserved", 30), app.text()
        assert "waiting" not in {s[0] for s in app.starts()}  # its handler never began
        assert alive(pid) and app.children(1) == {pid}  # the busy child was left alone
    finally:
        app.stop()
