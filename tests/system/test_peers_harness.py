"""The peers comparison's harness (``benchmarks/peers``, ``make bench-peers``) without running it.

The peer libraries pin redis-py < 6 and streamdelay needs >= 6.2, so the peers' processes run in
``.bench-venv`` without streamdelay: the modules they load must import without it. A ``--quick``
run (small sizes, a check of the pipeline) must never reach the docs; a full run replaces the
section between the markers and nothing else. The memory workload waits, against a real
redis-server, until its memory (less the connections' buffers) stops changing, and says when it
did not.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.peers import run
from benchmarks.peers.workload import FULL, QUICK, ROOT, layout, settle, stored_memory
from tests.support.redis_server import RedisServer

BLOCK_STREAMDELAY = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "streamdelay" or name.startswith("streamdelay."):
            raise ImportError("streamdelay is not installed in .bench-venv")
        return None
sys.meta_path.insert(0, Block())
import benchmarks.peers.record, benchmarks.peers.run, benchmarks.peers.workload
print("imported", "streamdelay" in sys.modules)
"""


def test_the_peers_processes_import_the_harness_without_streamdelay() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK_STREAMDELAY], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["imported", "False"]


def payload(sizes: dict[str, Any], quick: bool) -> dict[str, Any]:
    """A saved run: one library, each workload with odd figures."""
    base = {"peer": "huey", "version": "3.5.4", "worker": "`huey_consumer`",
            "load_at_start": 0.25, "redis_py": "5.3.1"}
    results = [
        {**base, "workload": "enqueue", "jobs": sizes["enqueue_jobs"], "jobs_per_s": 4321.0,
         "raw_zadd_per_s": 8765.0, "bytes_per_job": 241.7},
        {**base, "workload": "memory", "jobs": sizes["enqueue_jobs"], "bytes_per_job": 361.4,
         "settled": True, "settle_s": 4.2, "ran": 0},
        {**base, "workload": "drain", "jobs": sizes["drain_jobs"], "done": sizes["drain_jobs"],
         "jobs_per_s": 987.0, "early": 0, "timeout_s": 150.0},
        {**base, "workload": "lateness", "jobs": 400, "done": 400, "p50_ms": 512.0,
         "p99_ms": 991.0, "max_ms": 1003.0, "min_ms": 3.0, "early": 0},
    ]
    return {"date": "2026-11-24 01:00", "machine": "2 cores", "python": "3.11.7",
            "redis": "7.0.15", "quick": quick, "sizes": sizes, "peers": ["huey"],
            "results": results}


def docs_copy(tmp_path: Path) -> Path:
    """The two docs the section goes to, copied."""
    for name in ("benchmarks.md", "comparison.md"):
        (tmp_path / name).write_text((ROOT / "docs" / name).read_text())
    return tmp_path


def test_a_quick_run_never_writes_the_docs(tmp_path: Path) -> None:
    docs = docs_copy(tmp_path)
    before = {p.name: p.read_text() for p in docs.iterdir()}
    assert run.write_docs(payload(QUICK, quick=True), docs) == []
    assert {p.name: p.read_text() for p in docs.iterdir()} == before


def test_a_quick_run_saves_its_json_elsewhere(tmp_path: Path) -> None:
    saved = tmp_path / "quick.json"
    saved.write_text(json.dumps(payload(QUICK, quick=True)))
    last_run = run.JSON_OUT.read_text()
    done = subprocess.run([sys.executable, "-m", "benchmarks.peers.run", "--from-json",
                           str(saved)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "a --quick run" in done.stdout
    assert f"body, {QUICK['enqueue_jobs']:,} jobs)" in done.stdout  # its table, at its sizes
    assert run.JSON_OUT.read_text() == last_run


def test_a_full_run_replaces_the_marked_section_only(tmp_path: Path) -> None:
    docs = docs_copy(tmp_path)
    outside = {}
    for path in docs.iterdir():
        text = path.read_text()
        outside[path.name] = (text[:text.index(run.START)], text[text.index(run.END):])
    assert len(run.write_docs(payload(FULL, quick=False), docs)) == 2
    for path in docs.iterdir():
        text = path.read_text()
        head, tail = outside[path.name]
        assert text.startswith(head) and text.count(run.START) == 1
        assert text.endswith(tail[len(run.END):])
        inside = text[text.index(run.START):text.index(run.END)]
        assert "| 4,321 |" in inside and "| 242 |" in inside and "| 8,765 |" in inside
        waits = next(line for line in inside.splitlines() if "while it waits" in line)
        assert waits.endswith("| 361 |")
        assert f"body, {FULL['enqueue_jobs']:,} jobs)" in inside
        assert "redis-py 5.3.1 for the peers" in inside


def test_an_early_start_under_a_millisecond_shows_its_tenths() -> None:
    result = {"early": 1, "min_ms": -0.3, "jobs": 400, "done": 400}
    assert run._cell(result, "early") == "1 (earliest -0.3 ms)"
    assert run._cell({**result, "min_ms": -718.4}, "early") == "1 (earliest -718 ms)"


def test_a_memory_figure_says_when_it_had_not_settled_or_jobs_ran() -> None:
    result = {"jobs": 500, "bytes_per_job": 400.2, "settled": True, "settle_s": 5.0, "ran": 0}
    assert run._cell(result, "waiting") == "400"
    assert run._cell({**result, "settled": False, "settle_s": 120.3}, "waiting") == \
        "400 (still changing after 120 s)"
    assert run._cell({**result, "ran": 3}, "waiting") == "400 (3 ran)"


def _writer(client: Any, stop: threading.Event, until: float) -> None:
    """2 KB more in Redis every 20 ms (~100 KB/s) until ``stop`` or ``until``."""
    i = 0
    while not stop.is_set() and time.monotonic() < until:
        client.set(f"grow:{i}", "x" * 2048)
        i += 1
        time.sleep(0.02)


def test_settle_waits_while_memory_grows_and_returns_once_it_stops(
        own_redis: RedisServer) -> None:
    client = own_redis.client()
    stop = threading.Event()
    thread = threading.Thread(target=_writer, args=(client, stop, time.monotonic() + 1.5))
    began = time.monotonic()
    thread.start()
    try:
        memory, waited, settled = settle(client, None, timeout=10, window=0.5, tolerance=4096,
                                         interval=0.05)
        returned = time.monotonic()
    finally:
        stop.set()
        thread.join()
    assert settled and waited <= returned - began
    assert returned - began >= 1.5 + 0.5 - 0.2  # the writes, then a flat window
    assert memory >= client.dbsize() * 2048 >= 40 * 2048


def test_settle_gives_up_after_its_timeout_when_memory_keeps_changing(
        own_redis: RedisServer) -> None:
    client = own_redis.client()
    stop = threading.Event()
    thread = threading.Thread(target=_writer, args=(client, stop, time.monotonic() + 30))
    thread.start()
    try:
        _, waited, settled = settle(client, None, timeout=1.5, window=0.5, tolerance=4096,
                                    interval=0.05)
    finally:
        stop.set()
        thread.join()
    assert not settled and 1.5 <= waited < 3


def test_layout_groups_keys_by_name_with_digits_masked(own_redis: RedisServer) -> None:
    client = own_redis.client()
    for i in (1, 22, 333):
        client.set(f"lib:job:e{i}", "x" * 100)
    client.zadd("lib:queue", {"e1": 1, "e22": 2, "e333": 3})
    groups = layout(client)
    assert set(groups) == {"lib:job:eN", "lib:queue"}
    assert groups["lib:job:eN"]["type"] == "string" and groups["lib:job:eN"]["keys"] == 3
    assert groups["lib:job:eN"]["bytes"] == sum(
        client.memory_usage(f"lib:job:e{i}", samples=0) for i in (1, 22, 333))
    assert groups["lib:queue"] == {"type": "zset", "keys": 1,
                                   "bytes": client.memory_usage("lib:queue", samples=0)}


def test_stored_memory_leaves_out_a_connection_s_query_buffer(own_redis: RedisServer) -> None:
    client = own_redis.client()
    deadline = time.monotonic() + 10
    while not int(client.info("memory")["mem_clients_normal"]):  # counted in clientsCron
        assert time.monotonic() < deadline
        time.sleep(0.05)
    used, stored = int(client.info("memory")["used_memory"]), stored_memory(client)
    with socket.create_connection(("127.0.0.1", own_redis.port)) as sock:
        # half of a 1 MB SET: Redis holds the bulk's 1 MB buffer until the command is complete
        sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n" + b"x" * 500_000)
        while int(client.info("memory")["mem_clients_normal"]) < 1_000_000:
            assert time.monotonic() < deadline, "the half-sent command never showed"
            time.sleep(0.05)
        assert int(client.info("memory")["used_memory"]) - used >= 1_000_000
        assert abs(stored_memory(client) - stored) < 65536  # a new connection's own bytes
