"""``streamdelay demo --dashboard`` (``make demo-dashboard``): after the demo, its queue's
dashboard answers on loopback until SIGINT; plain ``demo`` says how to get there."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

from tests.support.redis_server import RedisServer, free_port
from tests.support.web_server import ROOT


def test_demo_then_its_dashboard_until_ctrl_c(shared_redis: RedisServer) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "STREAMDELAY_TOKENS"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamdelay", "demo", "--jobs", "20", "--max-delay", "1s",
         "--dashboard", "--dashboard-port", str(port), "--url", shared_redis.url],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 60
        while not any("Ctrl-C stops it" in line for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
            lines.append(proc.stdout.readline())
        name = re.search(r"shows queue (demo-[0-9a-f]+)", "".join(lines)).group(1)  # type: ignore[union-attr]
        page = ""
        while f'data-live="/q/{name}/fragment/topics"' not in page:
            assert time.monotonic() < deadline, page[:500]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    page = answer.read().decode()
            except OSError:
                time.sleep(0.1)
        assert 'data-topic="demo.doomed"' in page  # the demo's dead job's topic is listed
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert shared_redis.client().keys(f"sd:{{{name}#*") == []  # nothing left behind


def test_plain_demo_says_how_to_open_the_dashboard(shared_redis: RedisServer) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "streamdelay", "demo", "--jobs", "10", "--max-delay", "1s",
         "--url", shared_redis.url], capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "`make demo-dashboard`" in result.stdout and "http://127.0.0.1:8080/" in result.stdout
