"""The peers comparison's harness (``benchmarks/peers``, ``make bench-peers``) without running it.

The peer libraries pin redis-py < 6 and streamdelay needs >= 6.2, so the peers' processes run in
``.bench-venv`` without streamdelay: the modules they load must import without it. A ``--quick``
run (small sizes, a check of the pipeline) must never reach the docs; a full run replaces the
section between the markers and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.peers import run
from benchmarks.peers.workload import FULL, QUICK, ROOT

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
        assert f"body, {FULL['enqueue_jobs']:,} jobs)" in inside
        assert "redis-py 5.3.1 for the peers" in inside


def test_an_early_start_under_a_millisecond_shows_its_tenths() -> None:
    result = {"early": 1, "min_ms": -0.3, "jobs": 400, "done": 400}
    assert run._cell(result, "early") == "1 (earliest -0.3 ms)"
    assert run._cell({**result, "min_ms": -718.4}, "early") == "1 (earliest -718 ms)"
