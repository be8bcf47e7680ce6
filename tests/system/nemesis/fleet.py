"""The processes of a nemesis run (tests/system/nemesis/run.py): workers, dispatchers,
``streamdelay serve``, HTTP consumers and producers, each a real subprocess (some inside a
network namespace of the run's ``Net``), restartable by the nemesis under the same name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.redis_server import free_port
from tests.system.nemesis.net import Net, NetHost
from tests.system.nemesis.workloads import SERVE_ENV, TOKEN_ENV

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "nemesis-" + "a7" * 12


@dataclass
class Member:
    """One named process of the fleet: how to start it, where (a ``Net`` host or the
    machine's namespace), and its current Popen."""

    name: str
    kind: str
    argv: Callable[[], list[str]]
    host: NetHost | None = None
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    env: dict[str, str] = field(default_factory=dict)


class Fleet:
    """Starts, restarts and stops the run's processes; every one logs to ``OUT/logs/``."""

    def __init__(self, out: Path, queue: str, partitions: int, net: Net | None) -> None:
        self.out, self.queue, self.net = out, queue, net
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "STREAMDELAY_PARTITIONS": str(partitions),
                    "STREAMDELAY_TOKENS": f"nemesis:{TOKEN}:consume,read",
                    "PYTHONPATH": str(ROOT), TOKEN_ENV: TOKEN}
        self.members: dict[str, Member] = {}
        self.serve_port = free_port()
        self.serve_host: NetHost | None = None
        # the Redis URL of a process in a host (None: this namespace): set once Redis runs
        # (topology.py), before any process starts
        self.url_of: Callable[[NetHost | None], str] | None = None

    def url(self, host: NetHost | None) -> str:
        """The Redis URL a process in ``host`` (None: this namespace) uses."""
        if self.url_of is None:
            raise RuntimeError("Fleet.url_of is not set: start Redis first")
        return self.url_of(host)

    def _host(self, name: str, in_net: bool) -> NetHost | None:
        return self.net.host(name) if in_net and self.net is not None else None

    def add(self, name: str, kind: str, argv: Callable[[NetHost | None], list[str]],
            in_net: bool = False) -> Member:
        """Define a process (not started yet); ``argv(host)`` is its command line."""
        host = self._host(name, in_net)
        member = Member(name, kind, lambda: argv(host), host)
        self.members[name] = member
        return member

    def worker(self, name: str, in_net: bool, rogue: bool = False,
               broken: str | None = None) -> Member:
        """A worker app process (tests/system/nemesis/app.py); ``broken``: a broken build
        (app.py ``BROKEN``)."""
        return self.add(name, "worker", lambda h: [
            sys.executable, "-m", "tests.system.nemesis.app", self.url(h), self.queue,
            str(self.out / "history"), name, *(["--rogue"] if rogue else []),
            *(["--broken", broken] if broken else [])], in_net)

    def dispatcher(self, name: str, in_net: bool) -> Member:
        """A standalone dispatcher (tests/system/chaos/app.py)."""
        return self.add(name, "dispatcher", lambda h: [
            sys.executable, "-m", "tests.system.chaos.app", "dispatch", self.url(h),
            self.queue], in_net)

    def serve(self, in_net: bool = False) -> Member:
        """``streamdelay serve`` (with its dispatchers) on a fixed port, in a namespace of its
        own when ``in_net`` (cut off from Redis and from its clients by a cut of its link)."""
        member = self.add("serve", "serve", lambda h: [
            sys.executable, "-m", "streamdelay", "serve", "--url", self.url(h), "--queue",
            self.queue, "--host", h.ip if h else "127.0.0.1", "--port", str(self.serve_port),
            "--log-format", "json"], in_net)
        self.serve_host = member.host
        self.env[SERVE_ENV] = self.serve_base
        return member

    @property
    def serve_base(self) -> str:
        """The base URL of ``serve`` (its namespace's address is reachable from this one)."""
        host = self.serve_host.ip if self.serve_host else "127.0.0.1"
        return f"http://{host}:{self.serve_port}"

    def http_consumer(self, name: str) -> Member:
        """An HTTP consumer (tests/system/nemesis/http_consumer.py)."""
        return self.add(name, "http", lambda h: [
            sys.executable, "-m", "tests.system.nemesis.http_consumer", self.serve_base, TOKEN,
            self.queue, str(self.out / "history"), name])

    def producer(self, name: str, workload: str, seed: int, seconds: float,
                 in_net: bool = False) -> Member:
        """A producer of one workload (tests/system/nemesis/workloads.py), in a namespace of
        its own when ``in_net`` (its calls then cut off, silenced or slowed by the nemesis)."""
        return self.add(name, "producer", lambda h: [
            sys.executable, "-m", "tests.system.nemesis.workloads", self.url(h), self.queue,
            str(self.out / "history"), name, workload, str(seed), str(seconds)], in_net)

    def start(self, name: str) -> None:
        """Start (or start again) one process; reaps the previous one first."""
        member = self.members[name]
        old = member.process
        if old is not None:
            if old.poll() is None:
                old.kill()
            old.wait()
        argv = member.argv()
        if member.host is not None:
            argv = member.host.wrap(argv)
        with (self.logs / f"{name}.log").open("ab") as log:
            member.process = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log,
                                              env=self.env)
        member.starts += 1
        if member.kind == "serve":
            self.wait_serve()

    def wait_serve(self, timeout: float = 60.0) -> None:
        """Wait until ``serve`` answers /healthz (a restart by the nemesis waits too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.serve_base + "/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"streamdelay serve did not answer /healthz in {timeout:g} s (see "
                           f"{self.logs / 'serve.log'})")

    def process(self, name: str) -> subprocess.Popen[bytes] | None:
        """The current Popen of ``name``."""
        return self.members[name].process

    def of_kind(self, kind: str) -> list[Member]:
        """The members of one kind."""
        return [m for m in self.members.values() if m.kind == kind]

    def exited(self, kind: str) -> list[str]:
        """Members of ``kind`` that exited by themselves (not stopped by the run)."""
        return [m.name for m in self.of_kind(kind)
                if m.process is not None and m.process.poll() not in (None, 0)]

    def wait_kind(self, kind: str, timeout: float) -> bool:
        """Wait for every process of ``kind`` to exit; True when they all did."""
        deadline = time.monotonic() + timeout
        for member in self.of_kind(kind):
            if member.process is None:
                continue
            try:
                member.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def stop(self) -> None:
        """SIGTERM everything still running, SIGKILL what does not exit in 15 s."""
        running = [m.process for m in self.members.values()
                   if m.process is not None and m.process.poll() is None]
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
