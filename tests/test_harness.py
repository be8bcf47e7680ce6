"""The harness itself: servers that are really ours, no silent skips, tools installed, CI lints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import cluster_port, ephemeral_range
from tests.redis_server import RedisServer, answering_pid

ROOT = Path(__file__).resolve().parent.parent


def test_a_first_start_on_a_taken_port_moves_to_another_port() -> None:
    with RedisServer() as other:
        ports = iter([other.port])  # the port is taken between picking it and binding it
        server = RedisServer(port_picker=lambda: next(ports, 0) or _free())
        try:
            server.start()
            assert server.port != other.port
            assert server.process is not None
            assert answering_pid(server.port) == server.process.pid
        finally:
            server.stop()


def _free() -> int:
    from tests.redis_server import free_port

    return free_port()


def test_a_restart_never_talks_to_another_server_on_its_port() -> None:
    server = RedisServer().start()
    try:
        server.kill()
        intruder = RedisServer(port_picker=lambda: server.port)
        with intruder:  # someone else now listens on the port of the killed server
            with pytest.raises(RuntimeError, match="did not start"):
                server.start()
            assert server.process is None
    finally:
        server.stop()


def test_cluster_ports_and_bus_ports_lie_below_the_ephemeral_range() -> None:
    low, _ = ephemeral_range()
    for _ in range(200):
        port = cluster_port()
        assert port > 1024 and port + 10_000 < low, port


def test_a_skipped_test_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n"
        "def test_needs_a_tool():\n    pytest.skip('the frobnicator is not installed')\n\n"
        "def test_fine():\n    assert True\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.no_skips", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_skips.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert "the frobnicator is not installed" in done.stdout


def _fake_path(tmp_path: Path, present: list[str]) -> tuple[dict[str, str], Path]:
    """A PATH holding only ``present`` (real tools) and an ``apt-get`` that logs its args."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in present:
        real = shutil.which(name)
        assert real is not None, name
        (bin_dir / name).symlink_to(real)
    log = tmp_path / "apt.log"
    apt = bin_dir / "apt-get"
    apt.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n")
    apt.chmod(0o755)
    return {**os.environ, "PATH": str(bin_dir)}, log


def _makefile_tools() -> dict[str, str]:
    """The Makefile's TOOLS list: command -> Debian package."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if ln.startswith("TOOLS :="))
    return dict(pair.split(":", 1) for pair in line.split(":=", 1)[1].split())


def test_makefile_lists_every_tool_the_suite_runs() -> None:
    tools = _makefile_tools()
    for command in ("redis-server", "redis-cli", "openssl", "prometheus", "chromium", "curl",
                    "jq", "node", "php"):
        assert command in tools, command


@pytest.mark.parametrize("missing", ["openssl", "redis-cli", "prometheus", "chromium", None])
def test_make_tools_installs_what_is_missing_and_only_that(tmp_path: Path,
                                                           missing: str | None) -> None:
    tools = list(_makefile_tools())
    env, log = _fake_path(tmp_path, [t for t in tools if t != missing])
    make = shutil.which("make")
    assert make is not None
    done = subprocess.run([make, "-s", "tools"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    if missing is None:
        assert calls == []
    else:
        package = _makefile_tools()[missing]
        installs = [c.split() for c in calls if c.split()[:1] == ["install"]]
        assert installs and package in installs[0], calls
        assert "--no-install-recommends" in installs[0], calls  # ~140 packages fewer (issue 25)


def test_ci_runs_lint_and_the_tests() -> None:
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "set -euo pipefail" in steps
    assert "make lint" in steps and "make test" in steps
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
