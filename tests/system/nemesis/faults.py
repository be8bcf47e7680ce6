"""The nemesis (docs/reliability.md#nemesis): a schedule of faults drawn from a seed, run in
a thread against the targets of a run, each fault's begin and end noted in the run's history
(``recorder.note('fault', name=, target=, phase=, duration_s=)``, tests/system/nemesis/history.py).

Faults and the targets they apply to:

- ``kill``: SIGKILL a worker, dispatcher, ``serve`` or HTTP consumer; ``target.restart()`` after
  ``duration_s``;
- ``stop``: SIGSTOP any process target (Redis and the producers in namespaces too), SIGCONT
  after ``duration_s``;
- ``redis_restart``: SIGKILL redis-server, restart it from its append-only file on the same port
  after ``duration_s`` (the rig runs Redis with ``appendfsync always``: an acknowledged write is
  on disk; with ``everysec`` up to a second of acknowledged enqueues can vanish in a kill -9);
- ``failover``: the target's ``action`` (``sentinel_target``: the primary killed -9, Sentinel
  promotes the replica, the old primary restarted after ``duration_s`` as the new replica);
- ``migrate``: the target's ``action`` (``cluster_target``: one slot moved key by key to another
  primary, as ``redis-cli --cluster reshard`` does);
- ``cut_loud`` / ``cut_silent`` / ``degrade``: the target's namespace link (``Net.cut``,
  ``Net.degrade``) for ``duration_s``, then healed; on a ``redis`` target every host of the
  ``Net`` at once: Redis cut off from everyone in a namespace.

The schedule is a function of the seed alone: the same seed, targets and kinds give the same
faults. Faults on one target never overlap, nor do two network faults (a heal would end both).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.system.nemesis.net import Net

Kind = Literal["worker", "dispatcher", "serve", "http", "producer", "redis", "sentinel",
               "cluster"]
FAULTS = ("kill", "stop", "redis_restart", "failover", "migrate", "cut_loud", "cut_silent",
          "degrade")
PROCESS_KINDS = ("worker", "dispatcher", "serve", "http")  # http: an HTTP consumer
NET_FAULTS = ("cut_loud", "cut_silent", "degrade")
DEGRADE_KBIT = 256  # the shaped rate of a degraded link, each way
DEGRADE_LOSS_PCT = 10.0


@dataclass
class Target:
    """Something the nemesis hits. ``pid`` gives the current process id (None when not
    running); ``restart`` brings a killed one back; ``host`` is its ``Net`` host (where cuts
    apply); ``action`` runs a whole ``failover`` / ``migrate`` (argument: ``duration_s``) and
    returns what it did."""

    name: str
    kind: Kind
    pid: Callable[[], int | None] = field(default=lambda: None)
    restart: Callable[[], None] | None = None
    host: str | None = None
    action: Callable[[float], str] | None = None


@dataclass(frozen=True)
class Fault:
    """One scheduled fault: when (seconds after ``Nemesis.start``), what, on whom, how long."""

    at_s: float
    name: str
    target: str
    duration_s: float


def applies(fault: str, target: Target) -> bool:
    """Whether ``fault`` can hit ``target``."""
    if fault == "kill":
        return target.kind in PROCESS_KINDS and target.restart is not None
    if fault == "stop":
        return target.kind in (*PROCESS_KINDS, "producer", "redis")
    if fault == "redis_restart":
        return target.kind == "redis" and target.restart is not None
    if fault == "failover":
        return target.kind == "sentinel" and target.action is not None
    if fault == "migrate":
        return target.kind == "cluster" and target.action is not None
    if fault in NET_FAULTS:
        return target.host is not None or target.kind == "redis"
    raise ValueError(f"unknown fault {fault!r} (one of {', '.join(FAULTS)})")


def _duration(rng: random.Random, fault: str, cut_max_s: float) -> float:
    if fault in (*NET_FAULTS, "stop"):
        return round(rng.uniform(0.2, max(cut_max_s, 0.3)), 2)
    if fault in ("kill", "redis_restart"):
        return round(rng.uniform(0.0, 2.0), 2)  # down time before the restart
    if fault == "failover":
        return round(rng.uniform(0.5, 2.0), 2)  # before the old primary comes back
    return 0.0  # migrate: as long as moving the keys takes


def schedule(seed: int, duration_s: float, targets: list[Target], kinds: list[str], *,
             mean_gap_s: float, cut_max_s: float) -> list[Fault]:
    """The faults of a run of ``duration_s``: gaps drawn from an exponential of mean
    ``mean_gap_s``, a kind among ``kinds`` that has a free target, a target, a duration
    (cuts, degrades and stops up to ``cut_max_s``). Deterministic from ``seed``."""
    for kind in kinds:
        applies(kind, Target("probe", "worker"))  # unknown names fail here, not mid-run
    rng = random.Random(seed)
    busy: dict[str, float] = {}  # target (or "net") -> when its last fault ends, estimated
    faults: list[Fault] = []
    at = 0.0
    while True:
        at += rng.expovariate(1.0 / mean_gap_s)
        if at >= duration_s:
            return faults
        options = [(k, t) for k in kinds for t in targets
                   if applies(k, t) and busy.get(t.name, -1.0) < at
                   and (k not in NET_FAULTS or busy.get("net", -1.0) < at)]
        if not options:
            continue
        kind, target = options[rng.randrange(len(options))]
        length = _duration(rng, kind, cut_max_s)
        # a restart, a failover or a migration takes a few seconds beyond the drawn length
        busy[target.name] = at + length + (5.0 if kind in ("kill", "redis_restart",
                                                           "failover", "migrate") else 0.5)
        if kind in NET_FAULTS:
            busy["net"] = at + length + 0.5
        faults.append(Fault(round(at, 2), kind, target.name, length))


class Nemesis:
    """Runs ``faults`` against ``targets`` in a thread (each fault in its own, at its time).
    ``stop()`` ends the faults under way at once (SIGCONT, heal, restart) and skips the rest.
    A ``degrade`` shapes to ``degrade_kbit`` each way and loses ``degrade_loss_pct`` %."""

    def __init__(self, faults: list[Fault], targets: dict[str, Target], net: Net | None,
                 recorder: Any, *, degrade_kbit: int = DEGRADE_KBIT,
                 degrade_loss_pct: float | None = DEGRADE_LOSS_PCT) -> None:
        for fault in faults:
            if fault.target not in targets:
                raise ValueError(f"fault {fault} names an unknown target")
            if fault.name in NET_FAULTS and net is None:
                raise ValueError(f"fault {fault} needs a Net")
        self.faults, self.targets, self.net, self.recorder = faults, targets, net, recorder
        self.degrade_kbit, self.degrade_loss_pct = degrade_kbit, degrade_loss_pct
        self._stopping = threading.Event()
        self._locks = {name: threading.Lock() for name in [*targets, "net"]}
        self._threads: list[threading.Thread] = []
        self._main: threading.Thread | None = None
        self.errors: list[str] = []
        self.done: list[tuple[Fault, str]] = []  # each fault run and what it did

    def start(self) -> None:
        """Begin the schedule (times count from now)."""
        self._main = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._main.start()

    def _run(self) -> None:
        began = time.monotonic()
        for fault in sorted(self.faults, key=lambda f: f.at_s):
            if self._stopping.wait(max(0.0, began + fault.at_s - time.monotonic())):
                return
            thread = threading.Thread(target=self._one, args=(fault,), daemon=True,
                                      name=f"nemesis-{fault.name}-{fault.target}")
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float = 120.0) -> None:
        """End every fault under way (stopped processes continued, cuts healed, killed ones
        restarted), skip the faults not begun, and wait for all of it."""
        self._stopping.set()
        if self._main is not None:
            self._main.join(timeout)
        for thread in self._threads:
            thread.join(timeout)

    def _note(self, fault: Fault, phase: str, **fields: object) -> None:
        self.recorder.note("fault", name=fault.name, target=fault.target, phase=phase,
                           duration_s=fault.duration_s, **fields)

    def _one(self, fault: Fault) -> None:
        target = self.targets[fault.target]
        net_lock = self._locks["net"] if fault.name in NET_FAULTS else contextlib.nullcontext()
        with self._locks[target.name], net_lock:
            if self._stopping.is_set():
                return
            extra: dict[str, object] = {}
            if fault.name in NET_FAULTS and self.net is not None:
                extra["hosts"] = self._hosts(target)  # whom the cut cuts off (the checker)
            if fault.name in ("kill", "stop") and target.pid() is not None:
                # the process it hits (timeline.py: a kill ends the runs of that pid only,
                # also one it noted in the moment between this note and the signal)
                extra["pid"] = target.pid()
            self._note(fault, "begin", **extra)
            detail = ""
            try:
                detail = self._inject(fault, target)
            except Exception as exc:  # a fault that failed is reported; the run goes on
                detail = f"failed: {type(exc).__name__}: {exc}"
                self.errors.append(f"{fault}: {detail}")
            self.done.append((fault, detail))
            self._note(fault, "end", detail=detail, **extra)

    def _hold(self, seconds: float) -> None:
        """Wait out the fault's duration, or less when ``stop()`` is called."""
        self._stopping.wait(seconds)

    def _inject(self, fault: Fault, target: Target) -> str:
        name = fault.name
        if name in ("kill", "redis_restart"):
            pid = target.pid()
            if pid is not None:
                _signal(pid, signal.SIGKILL)
            self._hold(fault.duration_s)
            assert target.restart is not None
            target.restart()
            return f"pid {pid} killed, restarted as pid {target.pid()}"
        if name == "stop":
            pid = target.pid()
            if pid is None:
                return "not running"
            _signal(pid, signal.SIGSTOP)
            try:
                self._hold(fault.duration_s)
            finally:
                _signal(pid, signal.SIGCONT)
            return f"pid {pid} stopped {fault.duration_s:g} s"
        if name in ("failover", "migrate"):
            assert target.action is not None
            return target.action(0.0 if self._stopping.is_set() else fault.duration_s)
        return self._net_fault(fault, target)

    def _hosts(self, target: Target) -> list[str]:
        """The ``Net`` hosts a network fault on ``target`` hits: its own, or for Redis all."""
        assert self.net is not None
        return [target.host] if target.host is not None else list(self.net.hosts)

    def _net_fault(self, fault: Fault, target: Target) -> str:
        assert self.net is not None
        hosts = self._hosts(target)
        try:
            for host in hosts:
                if fault.name == "degrade":
                    self.net.degrade(host, self.degrade_kbit, self.degrade_loss_pct)
                else:
                    self.net.cut(host, silent=fault.name == "cut_silent")
            self._hold(fault.duration_s)
        finally:
            for host in hosts:
                self.net.heal(host)
        return f"{fault.name} of {', '.join(hosts)} for {fault.duration_s:g} s"


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
