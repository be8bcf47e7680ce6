"""The pictures in docs/operations.md#metrics: a demo run graphed by a real Prometheus, in its
own web UI (``/graph``), shot by headless Chromium.

    .venv/bin/python benchmarks/web/metrics_screenshot.py            # ~2.5 min

Starts a redis-server, two worker processes with ``--metrics-port``
(``tests.support.apps.metrics_app``),
``streamdelay exporter`` and Prometheus (Debian's package, 1 s scrapes, both workers as one
job: how a fleet is scraped). The load, all enqueued up front with due times spread over
``--seconds``: 100 jobs/s, then 400 jobs/s, a burst of 4000 jobs due in the same instant,
100 jobs/s again; throughout, 2 jobs/s that raise ``sd.Drop`` and 1 job/s that always fails
(retried, dead at its third attempt). Writes docs/img/prometheus-lateness-throughput.png and
docs/img/prometheus-depth-lag.png.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamdelay as sd  # noqa: E402
from tests.support.prometheus_server import PrometheusServer  # noqa: E402
from tests.support.redis_server import RedisServer, free_port  # noqa: E402

QUEUE = "demo"
IMG = ROOT / "docs" / "img"
RATE = "10s"
LATENESS = " or ".join(
    f'label_replace(histogram_quantile({q}, sum by (le) (rate('
    f'streamdelay_lateness_seconds_bucket[{RATE}]))), "quantile", "{name}", "", "")'
    for q, name in ((0.5, "p50"), (0.99, "p99")))
PICTURES = {
    "prometheus-lateness-throughput.png": [
        LATENESS, f"sum by (outcome) (rate(streamdelay_jobs_total[{RATE}]))"],
    "prometheus-depth-lag.png": [
        'sum by (state) (streamdelay_queue_jobs{state!="delayed"})',
        "max by (topic) (streamdelay_queue_lag_seconds)"],
}


def load(seconds: float) -> list[sd.JobSpec]:
    """The demo's jobs, due over ``seconds`` from now (see the module docstring)."""
    specs: list[sd.JobSpec] = []
    phase = seconds / 4

    def steady(start: float, end: float, per_second: int) -> None:
        count = int((end - start) * per_second)
        specs.extend(sd.JobSpec("m.ok", {"ms": 2 + i % 9}, delay=start + i / per_second)
                     for i in range(count))

    steady(1, phase, 100)
    steady(phase, 2 * phase, 400)
    specs.extend(sd.JobSpec("m.ok", {"ms": 5}, delay=2 * phase + 5) for _ in range(4000))
    steady(2 * phase + 10, seconds, 100)
    specs.extend(sd.JobSpec("m.drop", None, delay=1 + i / 2) for i in range(int(seconds * 2)))
    specs.extend(sd.JobSpec("m.fail", None, delay=1 + i, max_attempts=3)
                 for i in range(int(seconds)))
    return specs


def graph_url(base: str, exprs: list[str], window: str) -> str:
    """Prometheus' own ``/graph`` page with one graph per expression."""
    params: dict[str, str] = {}
    for i, expr in enumerate(exprs):
        params.update({f"g{i}.expr": expr, f"g{i}.tab": "0", f"g{i}.range_input": window,
                       f"g{i}.stacked": "0"})
    return f"{base}/graph?{urllib.parse.urlencode(params)}"


def shoot(url: str, out: Path) -> None:
    """Headless Chromium (Debian's package) renders ``url`` into ``out``."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is not installed: apt-get install chromium")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1400,1560", "--virtual-time-budget=10000",
                    f"--screenshot={out}", url], check=True, capture_output=True, timeout=120)


def main() -> None:
    """Run the demo under Prometheus and take the pictures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=100.0, help="Length of the load.")
    args = parser.parse_args()
    env = dict(os.environ, METRICS_APP_QUEUE=QUEUE, PYTHONPATH=str(ROOT))
    with RedisServer() as redis_server:
        ports = [free_port() for _ in range(3)]
        command = [sys.executable, "-m", "streamdelay"]
        processes = [subprocess.Popen([*command, "worker", "tests.support.apps.metrics_app:worker",
                                       "--url", redis_server.url, "--metrics-port", str(port),
                                       "--log-level", "warning"], cwd=ROOT, env=env)
                     for port in ports[:2]]
        processes.append(subprocess.Popen([*command, "exporter", QUEUE, "--url",
                                           redis_server.url, "--port", str(ports[2]),
                                           "--log-level", "warning"], cwd=ROOT, env=env))
        targets: dict[str, str | list[str]] = {
            "streamdelay-workers": [f"127.0.0.1:{p}" for p in ports[:2]],
            "streamdelay-exporter": f"127.0.0.1:{ports[2]}"}
        try:
            with PrometheusServer(targets) as prom, sd.Queue(QUEUE, url=redis_server.url) as q:
                specs = load(args.seconds)
                for start in range(0, len(specs), 1000):
                    q.enqueue_many(specs[start:start + 1000])
                print(f"{len(specs)} jobs enqueued; running {args.seconds:.0f} s", flush=True)
                time.sleep(args.seconds + 8)
                window = f"{int(args.seconds + 20)}s"
                IMG.mkdir(exist_ok=True)
                for name, exprs in PICTURES.items():
                    shoot(graph_url(prom.url, exprs, window), IMG / name)
                    print(f"wrote {IMG / name}")
                total = q.stats().total
                print(f"left: delayed {total.delayed} ready {total.ready} dead {total.dead}")
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(30)


if __name__ == "__main__":
    main()
