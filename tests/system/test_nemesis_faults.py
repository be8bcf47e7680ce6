"""Each fault of the nemesis (tests/system/nemesis/faults.py, docs/reliability.md#nemesis) does
what it says on real processes and a real network namespace: a loud cut makes a PING from the
namespace fail at once and a heal brings it back; a silent cut makes it time out (never a
refusal); a degraded link carries measurably less than the same link undegraded; kill -9 and a
restart give a new pid; SIGSTOP stops and ``stop()`` continues; Redis comes back from its AOF
with what was written; Sentinel promotes the replica; a slot moves to another primary. Every
namespace is removed again, also on failure, and what a killed run left is cleaned up.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import LocalCluster, LocalSentinel
from tests.support.redis_server import RedisServer, wait_until
from tests.system.nemesis.faults import FAULTS, Fault, Nemesis, Target, schedule
from tests.system.nemesis.net import (
    NS_PREFIX,
    Net,
    NetUnavailable,
    cleanup_stale,
    free_subnet_index,
    require_root,
)
from tests.system.nemesis.targets import (
    cluster_target,
    process_target,
    redis_target,
    sentinel_target,
)

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]

# Run inside a namespace: connect to HOST:PORT, send PING, print how it went.
PROBE = """
import socket, sys, time
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
began = time.monotonic()
try:
    s = socket.create_connection((host, port), timeout=timeout)
    s.sendall(b"PING\\r\\n")
    print("ok" if s.recv(16).startswith(b"+PONG") else "bad")
except TimeoutError:
    print("timeout")
except ConnectionRefusedError:
    print("refused")
except OSError as exc:
    print("unreachable" if exc.errno in (101, 113) else f"error {exc.errno}")
print(time.monotonic() - began, file=sys.stderr)
"""
# Run inside a namespace: send as fast as it can for SECONDS (the sink counts what arrives).
BLAST = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.settimeout(0.2)
end = time.monotonic() + float(sys.argv[3])
chunk = b"x" * 65536
while time.monotonic() < end:
    try:
        s.sendall(chunk)
    except TimeoutError:
        pass
    except OSError:
        break
"""


class Notes:
    """The recorder's ``note`` (tests/system/nemesis/history.py), kept in a list."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def note(self, kind: str, job: str | None = None, **fields: Any) -> None:
        """Keep one note."""
        self.records.append({"kind": kind, "job": job, **fields})


@pytest.fixture(scope="module")
def net() -> Iterator[Net]:
    require_root()
    rig = Net("t", free_subnet_index(200))
    try:
        yield rig
    finally:
        rig.close()
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert f"{NS_PREFIX}t-{rig.index}-" not in left, left


@pytest.fixture(scope="module")
def redis_in_reach(net: Net) -> Iterator[RedisServer]:
    net.host("a")
    net.host("b")
    with RedisServer(*net.redis_bind_args(), persistent=True) as server:
        yield server


def probe(net: Net, host: str, port: int, timeout: float = 1.5) -> str:
    """How a PING from ``host`` to Redis's host-side address went: ok, timeout, refused,
    unreachable."""
    return probe_timed(net, host, port, timeout)[0]


def probe_timed(net: Net, host: str, port: int, timeout: float) -> tuple[str, float]:
    """``probe`` and the seconds the attempt took in the probing process (not its start-up)."""
    h = net.hosts[host]
    done = subprocess.run(h.wrap([sys.executable, "-c", PROBE, h.host_ip, str(port),
                                  str(timeout)]), capture_output=True, text=True, timeout=60)
    try:
        return done.stdout.strip(), float(done.stderr.strip().rsplit("\n", 1)[-1])
    except ValueError:
        return done.stdout.strip() or done.stderr.strip(), -1.0


def test_the_schedule_is_a_function_of_the_seed() -> None:
    targets = [Target("w1", "worker", restart=lambda: None, host="a"),
               Target("w2", "worker", restart=lambda: None, host="b"),
               Target("redis", "redis", restart=lambda: None)]
    kinds = ["kill", "stop", "redis_restart", "cut_loud", "cut_silent", "degrade"]
    one = schedule(7, 300, targets, kinds, mean_gap_s=2.0, cut_max_s=3.0)
    assert one == schedule(7, 300, targets, kinds, mean_gap_s=2.0, cut_max_s=3.0)
    assert one != schedule(8, 300, targets, kinds, mean_gap_s=2.0, cut_max_s=3.0)
    assert {f.name for f in one} == set(kinds)
    assert all(f.at_s < 300 for f in one)
    assert all(f.target == "redis" for f in one if f.name == "redis_restart")
    net_faults = [f for f in one if f.name in ("cut_loud", "cut_silent", "degrade")]
    assert all(f.duration_s <= 3.0 for f in net_faults)
    assert all(a.at_s + a.duration_s < b.at_s for a, b in itertools.pairwise(net_faults))
    with pytest.raises(ValueError, match="unknown fault"):
        schedule(1, 10, targets, ["flood"], mean_gap_s=1.0, cut_max_s=1.0)
    assert set(FAULTS) >= set(kinds)


def test_a_loud_cut_fails_at_once_and_a_heal_restores(net: Net,
                                                       redis_in_reach: RedisServer) -> None:
    port = redis_in_reach.port
    assert probe(net, "a", port) == "ok"
    assert probe(net, "a", port + 1 if port < 65535 else port - 1) == "refused"
    net.cut("a", silent=False)
    try:
        result, took = probe_timed(net, "a", port, timeout=5)
        assert result == "unreachable"
        assert 0 <= took < 2.5  # at once, not after the 5 s timeout
        assert probe(net, "b", port) == "ok"  # one host only
    finally:
        net.heal("a")
    assert probe(net, "a", port) == "ok"


def test_a_silent_cut_times_out_and_never_refuses(net: Net, redis_in_reach: RedisServer) -> None:
    port = redis_in_reach.port
    net.cut("b", silent=True)
    try:
        assert probe(net, "b", port) == "timeout"
        assert probe(net, "b", port + 1 if port < 65535 else port - 1) == "timeout"
    finally:
        net.heal("b")
    assert probe(net, "b", port) == "ok"


def blast(net: Net, host: str, seconds: float) -> int:
    """Bytes that reached the machine's namespace from ``host`` within ``seconds`` of its
    sender connecting (sending as fast as it can)."""
    h = net.hosts[host]
    with socket.socket() as sink:
        sink.bind((h.host_ip, 0))
        sink.listen()
        sender = subprocess.Popen(h.wrap([sys.executable, "-c", BLAST, h.host_ip,
                                          str(sink.getsockname()[1]), str(seconds + 5)]),
                                  stderr=subprocess.DEVNULL)
        try:
            sink.settimeout(10)
            conn, _ = sink.accept()
            total, end = 0, time.monotonic() + seconds
            with conn:
                conn.settimeout(0.2)
                while time.monotonic() < end:
                    with contextlib.suppress(TimeoutError):
                        total += len(conn.recv(1 << 16))
        finally:
            sender.kill()
            sender.wait(10)
    return total


def test_a_degraded_link_carries_less_than_the_same_link_undegraded(net: Net) -> None:
    net.host("c")
    clear = blast(net, "c", 1.0)
    net.degrade("c", rate_kbit=512, loss_pct=10.0)
    try:
        shaped = blast(net, "c", 1.0)
        stats = subprocess.run(["tc", "-s", "class", "show", "dev", net.hosts["c"].veth],
                               capture_output=True, text=True).stdout
    finally:
        net.heal("c")
    assert shaped * 4 < clear, (shaped, clear)
    lossy = stats.split("class htb 1:20", 1)[1]
    assert int(lossy.split("dropped ", 1)[1].split(",", 1)[0]) > 0, stats  # the loss class
    assert blast(net, "c", 0.5) * 2 > shaped * 4  # healed: the shaping is gone


def test_a_cut_of_redis_cuts_every_host(net: Net, redis_in_reach: RedisServer) -> None:
    notes = Notes()
    nemesis = Nemesis([Fault(0.0, "cut_silent", "redis", 30.0)],
                      {"redis": redis_target("redis", redis_in_reach)}, net, notes)
    nemesis.start()
    try:
        assert wait_until(lambda: len(notes.records) == 1, timeout=10)
        assert [probe(net, "a", redis_in_reach.port), probe(net, "b", redis_in_reach.port)] \
            == ["timeout", "timeout"]
    finally:
        nemesis.stop()  # ends the 30 s cut now
    assert [r["phase"] for r in notes.records] == ["begin", "end"], notes.records
    assert notes.records[0] == {"kind": "fault", "job": None, "phase": "begin",
                                "name": "cut_silent", "target": "redis", "duration_s": 30.0,
                                "hosts": list(net.hosts)}
    assert probe(net, "a", redis_in_reach.port) == "ok"


def test_kill_restarts_with_a_new_pid_and_stop_continues(tmp_path: Path) -> None:
    procs = [subprocess.Popen(["sleep", "60"])]

    def restart() -> None:
        procs[-1].wait(5)
        procs.append(subprocess.Popen(["sleep", "60"]))

    target = process_target("w", "worker", lambda: procs[-1], restart)
    notes = Notes()
    first = procs[0].pid
    nemesis = Nemesis([Fault(0.0, "kill", "w", 0.2), Fault(0.5, "stop", "w", 30.0)],
                      {"w": target}, None, notes)
    try:
        nemesis.start()
        assert wait_until(lambda: len(procs) == 2 and len(notes.records) == 3, timeout=10)
        assert procs[0].returncode == -signal.SIGKILL
        second = target.pid()
        assert second is not None and second != first
        assert wait_until(lambda: _state(second) == "T", timeout=5)  # stopped
        nemesis.stop()  # ends the 30 s stop now
        assert wait_until(lambda: _state(second) != "T", timeout=5)  # continued
        assert [(r["name"], r["phase"]) for r in notes.records] == [
            ("kill", "begin"), ("kill", "end"), ("stop", "begin"), ("stop", "end")]
    finally:
        nemesis.stop()
        for proc in procs:
            proc.kill()
            proc.wait(5)


def test_a_seeded_schedule_runs_and_leaves_everything_as_it_was(
        net: Net, redis_in_reach: RedisServer) -> None:
    procs: dict[str, list[subprocess.Popen[bytes]]] = {}

    def spawn(host: str) -> None:
        procs.setdefault(host, []).append(
            subprocess.Popen(net.hosts[host].wrap(["sleep", "60"])))

    def restarter(host: str) -> Callable[[], None]:
        def restart() -> None:
            procs[host][-1].wait(5)
            spawn(host)
        return restart

    targets = []
    for host in ("a", "b"):
        spawn(host)
        targets.append(process_target(host, "worker", functools.partial(_last, procs[host]),
                                      restarter(host), host=host))
    targets.append(redis_target("redis", redis_in_reach))
    plan = schedule(3, 3.0, targets, ["kill", "stop", "cut_loud", "cut_silent", "degrade"],
                    mean_gap_s=0.3, cut_max_s=0.6)
    notes = Notes()
    nemesis = Nemesis(plan, {t.name: t for t in targets}, net, notes)
    try:
        nemesis.start()
        time.sleep(3.5)
    finally:
        nemesis.stop()
        try:
            assert not nemesis.errors, nemesis.errors
            begun = [(r["name"], r["target"]) for r in notes.records if r["phase"] == "begin"]
            ended = [(r["name"], r["target"]) for r in notes.records if r["phase"] == "end"]
            assert len(begun) >= 3 and sorted(begun) == sorted(ended), notes.records
            for host in ("a", "b"):
                pid = procs[host][-1].pid
                assert procs[host][-1].poll() is None and _state(pid) != "T", host
                assert probe(net, host, redis_in_reach.port) == "ok", host
        finally:
            for started in procs.values():
                for proc in started:
                    proc.kill()
                    proc.wait(5)


def _last(started: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    return started[-1]


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_redis_restart_comes_back_from_its_aof() -> None:
    with RedisServer(persistent=True) as server:
        with server.client() as client:
            client.set("acknowledged", "yes")
        target = redis_target("redis", server)
        before = target.pid()
        nemesis = Nemesis([Fault(0.0, "redis_restart", "redis", 0.3)], {"redis": target},
                          None, Notes())
        nemesis.start()
        time.sleep(0.1)
        nemesis.stop()
        assert not nemesis.errors, nemesis.errors
        assert target.pid() not in (None, before)
        with server.client() as client:
            assert client.get("acknowledged") == b"yes"


def test_failover_promotes_the_replica_and_back() -> None:
    with LocalSentinel(down_after_ms=500) as local:
        first = local.master_port()
        for graceful in (True, False):  # SENTINEL FAILOVER, then the primary killed -9
            old = local.master_port()
            action = sentinel_target("sentinel", local, graceful=graceful).action
            assert action is not None
            detail = action(0.1)
            assert "NOT" not in detail, detail
            assert local.master_port() not in (None, old), detail
        assert local.master_port() == first  # back on the first: the killed one came back


def test_migrate_moves_the_slot_to_another_primary() -> None:
    with LocalCluster(primaries=3) as cluster:
        key = "{nemesis}:jobs"
        owner = cluster.owner_of(key)
        with owner.client() as client:
            client.set(key, "1")
            client.set("{nemesis}:other", "2")
        detail = cluster_target("cluster", cluster, key).action(0.0)  # type: ignore[misc]
        assert cluster.owner_of(key) is not owner, detail
        with cluster.owner_of(key).client() as client:
            assert client.get("{nemesis}:other") == b"2"


def test_cleanup_stale_removes_what_a_killed_run_left_and_keeps_a_live_runs(net: Net) -> None:
    script = ("import sys, time; from tests.system.nemesis.net import Net, free_subnet_index; "
              "n = Net('k', free_subnet_index(200)); n.host('x'); "
              "print(n.hosts['x'].ns, flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None
    ns = child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)
    child.wait(5)
    removed = cleanup_stale()
    assert ns in removed
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                    text=True).stdout
    assert net.hosts["a"].ns not in removed  # a live run's namespaces stay
    assert probe(net, "a", 1) in ("refused", "ok")


def test_without_root_it_refuses_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "tc" else f"/bin/{tool}")
    with pytest.raises(NetUnavailable, match=r"need root .* and the tc command"):
        Net("u", 202)
