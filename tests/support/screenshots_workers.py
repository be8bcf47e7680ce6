"""Screenshots of the dashboard's Workers page and a worker's page for docs/dashboard.md
(docs/dashboard.md#workers): ``python -m tests.support.screenshots_workers [--out docs/img]``.

Starts its own redis-server, ``streamdelay serve`` of a queue ``orders`` and two real worker
processes (``tests/support/apps/fleet_worker_app.py``) running slow jobs, plus a pull consumer,
then opens the pages in headless Chromium (as ``screenshots.py`` does for the other pages).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import streamdelay as sd
from tests.support.browser import chromium
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "orders"
APP = "tests.support.apps.fleet_worker_app:worker"


def start_worker(url: str, topics: str, group: str) -> subprocess.Popen[bytes]:
    """A real worker process of ``orders`` serving ``topics`` (renewing every second)."""
    env = dict(os.environ, FLEET_APP_QUEUE=QUEUE, FLEET_APP_EVERY="1", FLEET_APP_TOPICS=topics,
               FLEET_APP_GROUP=group, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "streamdelay", "worker", APP, "--url", url],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def fill(url: str) -> str:
    """Jobs the workers run for a while, and a pull consumer; the name of a worker that runs
    some."""
    with sd.Queue(QUEUE, url=url) as q:
        deadline = time.monotonic() + 60
        while len(_listed(q)) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError("the workers did not start")
            time.sleep(0.2)
        q.enqueue_many([sd.JobSpec("pdf.render", {"ms": 600_000}, id=f"render-{n}")
                        for n in range(3)])
        q.enqueue_many([sd.JobSpec("mail.send", {"ms": 600_000}, id=f"mail-{n}")
                        for n in range(2)])
        q.reserve("webhook.send", group="webhooks", consumer="webhook-http-1", wait=0)
        while sum(w.running_count for w in _listed(q)) < 5:
            if time.monotonic() > deadline:
                raise RuntimeError("the jobs did not start")
            time.sleep(0.2)
        time.sleep(3)  # "for how long" reads a few seconds
        return next(w.name for w in _listed(q) if w.running_count)


def _listed(q: sd.Queue) -> list[sd.WorkerInfo]:
    try:
        return q.workers()
    except sd.NoSuchQueue:
        return []


def shoot(out: Path) -> list[Path]:
    """Serve ``orders`` with two workers, and save the Workers page and a worker's page."""
    out.mkdir(parents=True, exist_ok=True)
    with RedisServer() as redis, WebServer(redis.url, [QUEUE]) as server:
        workers = [start_worker(redis.url, "pdf.render,invoice.pdf", "renderers"),
                   start_worker(redis.url, "mail.send", "mailers")]
        try:
            name = fill(redis.url)
            pages = {"dashboard-workers.png": f"/q/{QUEUE}/workers",
                     "dashboard-worker.png": f"/q/{QUEUE}/worker?name={name}"}
            saved = []
            with chromium() as browser:
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.goto(server.url + "/login")
                page.fill("input[name=token]", server.token("admin"))
                with page.expect_navigation():
                    page.click("form[action='/login'] button")
                for file, path in pages.items():
                    page.goto(server.url + path)
                    page.wait_for_timeout(300)
                    page.screenshot(path=str(out / file), full_page=True)
                    saved.append(out / file)
            return saved
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(30)


def main() -> None:
    """Command line: where to write the images."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    for path in shoot(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
