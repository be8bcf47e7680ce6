"""Screenshots of the dashboard's main pages for docs/dashboard.md and the README:
``python -m tests.support.screenshots [--out docs/img]``.

Starts its own redis-server and ``streamdelay serve``, fills a queue ``orders`` (a delayed
backlog, jobs a real worker ran, dead letters, a paused topic, a limited topic, schedules),
then opens the pages in headless Chromium. The current minute's lateness comes from that
worker run; so that the charts have a history to show, the 14 minutes before it are seeded
with synthetic bucket and outcome counts written to the same per-minute hashes the workers
write (docs/dashboard.md#lateness).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from pathlib import Path

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.telemetry.lateness import KEEP_MINUTES, bucket_of
from tests.support.browser import chromium
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "orders"
PAGES = {  # file name -> path (after the queue is filled)
    "dashboard-queue.png": f"/q/{QUEUE}",
    "dashboard-delayed.png": f"/q/{QUEUE}/jobs?state=delayed&topic=order.close",
    # the dead list under the retention in force (docs/dashboard.md, reliability#dead-letter-...)
    "dashboard-dead.png": f"/q/{QUEUE}/jobs?state=dead",
    "dashboard-job.png": f"/q/{QUEUE}/job?id=hook-3",
    "dashboard-reserved.png": f"/q/{QUEUE}/job?id=render-77",
    "dashboard-confirm.png": f"/q/{QUEUE}/confirm?action=pause&topic=mail.send",
    "dashboard-search.png": f"/q/{QUEUE}/find?go=1&state=dead&error=503",
    "dashboard-bulk.png": f"/q/{QUEUE}/bulk?action=replay&state=dead&error=503",
    "dashboard-batch.png": f"/q/{QUEUE}/batch?id=invoices-nov",  # docs/dashboard.md#workflows
    "dashboard-workflow.png": f"/q/{QUEUE}/job?id=pdf-4",
    "dashboard-result.png": f"/q/{QUEUE}/job?id=mail-7",  # docs/dashboard.md#results
}
PHONE = {"dashboard-phone.png": f"/q/{QUEUE}"}  # 420 px wide
# the totals card alone (docs/dashboard.md#totals), its chart over 7 days
CARDS = {"dashboard-totals.png": (f"/q/{QUEUE}?window=7d", "section:has(#totals)")}


def fill(url: str) -> None:
    """A queue worth looking at: run some jobs for real, leave a backlog and dead letters; it
    keeps lifecycle events and results (the job pages' results and timelines)."""
    q = sd.Queue(QUEUE, url=url, events=True, keep_result=3600, dead_ttl=14 * 86400,
                 dead_max=10_000)
    q.enqueue_many([sd.JobSpec("mail.send", {"to": f"user{i}@example.com"}, id=f"mail-{i}")
                    for i in range(200)])
    q.enqueue_many([sd.JobSpec("webhook.send", {"url": f"https://example.com/hook/{i}"},
                               id=f"hook-{i}", max_attempts=1) for i in range(6)])
    # a batch half done (one member dead, two far ahead, added after the run below) and a job
    # waiting for two members (docs/dashboard.md#workflows)
    q.batch([sd.JobSpec("invoice.pdf", {"invoice": i}, id=f"pdf-{i}", max_attempts=1)
             for i in range(4)], id="invoices-nov", close=False,
            on_success=sd.JobSpec("mail.send", {"to": "billing@example.com"}),
            on_complete=sd.JobSpec("report.build", {"batch": "invoices-nov"}, priority=8))
    worker = sd.Worker(q, concurrency=16)

    @worker.handler("mail.send")
    async def send(job: sd.Job) -> dict[str, str]:
        await asyncio.sleep(0.002)
        return {"message_id": f"<{job.id}@mail.example.com>", "status": "250 OK"}

    @worker.handler("invoice.pdf")
    async def pdf(job: sd.Job) -> None:
        if job.body["invoice"] == 3:
            raise OSError("template invoice-v2.html: not found")

    @worker.handler("webhook.send")
    async def hook(job: sd.Job) -> None:
        raise ConnectionError(f"POST {job.body['url']}: 503 Service Unavailable")

    worker.run(until_idle=True)
    q.batch([sd.JobSpec("invoice.pdf", {"invoice": i}, id=f"pdf-{i}", delay=3600)
             for i in (4, 5)], id="invoices-nov")
    q.enqueue("ledger.close", {"month": "2026-11"}, id="ledger-close-nov",
              after=["pdf-4", "pdf-5"])
    q.enqueue_many([sd.JobSpec("order.close", {"order_id": 1000 + i}, id=f"close-{1000 + i}",
                               delay=60 + i * 7) for i in range(3000)])
    q.enqueue_many([sd.JobSpec("mail.send", {"to": f"later{i}@example.com"}, id=f"later-{i}",
                               delay=300 + i) for i in range(120)])
    q.enqueue_many([sd.JobSpec("report.build", {"day": i}, id=f"report-{i}", delay=3600 * i)
                    for i in range(1, 8)])
    q.enqueue_many([sd.JobSpec("invoice.send", {"invoice": i}, id=f"invoice-{i}")
                    for i in range(5)])  # ready, and no worker serves the topic: the warning
    q.pause("report.build")
    q.limit("webhook.send", rate="10/s", concurrency=4)  # the limit column (docs/limits.md)
    q.schedule("nightly-report", "report.build", {"kind": "daily"}, cron="0 3 * * *",
               tz="Europe/Paris")
    q.schedule("digest", "mail.send", {"kind": "digest"}, every=3600)
    q.schedule("cleanup", "order.close", every=900)
    q.pause_schedule("cleanup")
    seed_history(q)
    seed_week(q)
    q.enqueue("pdf.render", {"invoice": 77}, id="render-77", ttr=120)
    deadline = time.monotonic() + 20  # serve's dispatcher promotes it; then a consumer holds it
    while not q.reserve("pdf.render", group="renderers", consumer="render-1", wait=0.2):
        if time.monotonic() > deadline:
            raise RuntimeError("render-77 never became ready")
    q.close()


def seed_history(q: sd.Queue) -> None:
    """Synthetic lateness and outcome counts for the 14 minutes before this one (see the
    module doc)."""
    rng = random.Random(14)
    seconds, _ = q.client.time()
    minute = int(seconds) // 60
    base = PartitionKeys(q.name, 0).lateness
    pipe = q.client.pipeline(transaction=False)
    for back in range(1, 15):
        key = f"{base}:{minute - back}"
        for topic, typical in (("mail.send", 1.5), ("order.close", 4.0), ("webhook.send", 2.0)):
            started = 300 + rng.randrange(200)
            for _ in range(started):
                late = rng.lognormvariate(0, 0.6) * typical * (6 if back in (5, 6) else 1)
                pipe.hincrby(key, f"{bucket_of(late)}:{topic}", 1)
            failed = rng.randrange(20) if topic == "webhook.send" else rng.randrange(3)
            m = minute - back
            for outcome, count in (("ok", started - failed), ("retried", failed - failed // 4),
                                   ("dead", failed // 4)):
                pipe.hincrby(key, f"{outcome}:{topic}", count)
                # the history's minute and hour fields and totals (docs/dashboard.md#totals)
                pipe.hincrby(f"{base}:day:{m // 1440}", f"{m}:{outcome}", count)
                pipe.hincrby(f"{base}:day:{m // 1440}", f"h{m // 60}:{outcome}", count)
                pipe.hincrby(f"{base}:total", outcome, count)
        pipe.expire(key, KEEP_MINUTES * 60)
    pipe.execute()


def seed_week(q: sd.Queue) -> None:
    """Synthetic settled counts for the week before this hour, written as the workers' flush
    writes them (docs/dashboard.md#totals): hour fields of the per-day hashes and the totals,
    busier in the day than at night."""
    rng = random.Random(7)
    seconds, _ = q.client.time()
    hour = int(seconds) // 3600
    base = PartitionKeys(q.name, 0).lateness
    pipe = q.client.pipeline(transaction=False)
    for back in range(1, 168):
        h = hour - back
        key = f"{base}:day:{h // 24}"
        ok = int((800 if 7 <= h % 24 <= 20 else 150) * rng.uniform(0.7, 1.3))
        retried, dead = rng.randrange(ok // 20 + 1), rng.randrange(ok // 100 + 2)
        for outcome, count in (("ok", ok), ("retried", retried), ("dead", dead)):
            pipe.hincrby(key, f"h{h}:{outcome}", count)
            pipe.hincrby(f"{base}:total", outcome, count)
        pipe.expireat(key, (h // 24 + 8) * 86400)
    pipe.execute()


def shoot(out: Path) -> list[Path]:
    """Fill a queue, serve it, and save a screenshot of each page in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with RedisServer() as redis, WebServer(redis.url, [QUEUE]) as server:
        fill(redis.url)  # before the browser: Playwright's sync API holds an event loop
        saved = _pages(server, out)
    return saved


def _pages(server: WebServer, out: Path) -> list[Path]:
    saved = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server.url + "/login")
        page.fill("input[name=token]", server.token("admin"))
        with page.expect_navigation():
            page.click("form[action='/login'] button")
        for name, path in PAGES.items():
            page.goto(server.url + path)
            page.wait_for_timeout(300)
            target = out / name
            page.screenshot(path=str(target), full_page="delayed" not in name)
            saved.append(target)
        for name, (path, selector) in CARDS.items():
            page.goto(server.url + path)
            page.wait_for_timeout(300)
            target = out / name
            page.locator(selector).screenshot(path=str(target))
            saved.append(target)
        page.set_viewport_size({"width": 420, "height": 900})
        for name, path in PHONE.items():
            page.goto(server.url + path)
            page.wait_for_timeout(300)
            target = out / name
            page.screenshot(path=str(target), full_page=False)
            saved.append(target)
    return saved


def main() -> None:
    """Command line: where to write the images."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    for path in shoot(parser.parse_args().out):
        print(path)


if __name__ == "__main__":
    main()
