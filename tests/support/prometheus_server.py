"""A real Prometheus server for the metrics tests and the docs screenshot (Debian's
``prometheus`` package; ``make test`` installs it): private data directory, free loopback port,
PromQL over its HTTP API."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.redis_server import free_port


class PrometheusServer:
    """``prometheus`` scraping ``targets`` (job name -> ``host:port`` or a list of them, as a
    fleet of workers is scraped) every ``interval``."""

    def __init__(self, targets: dict[str, str | list[str]], interval: str = "1s") -> None:
        if shutil.which("prometheus") is None:
            raise RuntimeError("prometheus is not installed (make test installs it)")
        self.dir = Path(tempfile.mkdtemp(prefix="sd-prometheus-"))
        jobs = "".join(
            f"  - job_name: {name}\n    static_configs:\n      - targets: ["
            + ", ".join(f"'{t}'" for t in ([target] if isinstance(target, str) else target))
            + "]\n" for name, target in targets.items())
        (self.dir / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
            f"scrape_configs:\n{jobs}")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        """Start it and wait until it says it is ready."""
        self.process = subprocess.Popen(
            ["prometheus", f"--config.file={self.dir / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.dir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(self.dir / "prometheus.log").open("wb"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.dir / "prometheus.log").read_text()
                raise RuntimeError(f"prometheus exited: {log}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("prometheus did not become ready")

    def stop(self) -> None:
        """Stop it and remove its data."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
            self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PrometheusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The result vector of an instant PromQL query."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            body = json.load(reply)
        if body.get("status") != "success":
            raise RuntimeError(f"query {expr!r} failed: {body}")
        return list(body["data"]["result"])

    def value(self, expr: str) -> float | None:
        """The single value of an instant query (None when the result is empty)."""
        result = self.query(expr)
        if not result:
            return None
        if len(result) > 1:
            raise AssertionError(f"query {expr!r} has {len(result)} series: {result}")
        return float(result[0]["value"][1])

    def targets_up(self) -> dict[str, str]:
        """Job name -> health of its target ("up", "down", "unknown")."""
        url = f"{self.url}/api/v1/targets"
        with urllib.request.urlopen(url, timeout=10) as reply:
            active = json.load(reply)["data"]["activeTargets"]
        return {t["labels"]["job"]: t["health"] for t in active}
