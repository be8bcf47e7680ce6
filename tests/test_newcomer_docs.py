"""The docs as a newcomer reads them: the README's pull snippet runs as written on the README's
queue (the topic is served by the worker's group ``billing``, so the snippet names it, and the
text says a dispatcher must run: a Worker, ``streamdelay serve`` or ``streamdelay dispatch``,
else ``reserve`` waits for a job that never becomes ready); docs/comparison.md does not deny
what was built since (schedules, the web UI)."""

from __future__ import annotations

import asyncio
import re
import threading

import streamdelay as sd
from tests.web_server import ROOT


def _pull_snippet() -> tuple[str, str]:
    """(the prose before the snippet, the snippet's code)."""
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"No worker loop wanted\?(.*?)```python\n(.*?)```", readme, re.DOTALL)
    assert found is not None, "the README's pull snippet"
    return found.group(1), found.group(2)


def test_the_readme_says_a_dispatcher_must_run() -> None:
    prose, code = _pull_snippet()
    text = " ".join((prose + code).split())
    assert "streamdelay dispatch orders" in text and "streamdelay serve" in text
    assert "Worker" in text and 'group="billing"' in code


def test_the_readme_pull_snippet_runs_on_the_readme_queue(redis_url: str,
                                                          queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url)
    worker = sd.Worker(queue, group="billing", dispatch=False)  # the README's worker, stopped
    worker.handler("order.close")(lambda job: None)
    dispatcher = sd.Dispatcher(queue.config)  # `streamdelay dispatch orders`

    async def register() -> None:
        await worker.register()
        await worker.client.aclose()

    asyncio.run(register())
    stop = threading.Event()

    def dispatch() -> None:
        async def run() -> None:
            task = asyncio.ensure_future(dispatcher.run())
            while not stop.is_set():
                await asyncio.sleep(0.05)
            dispatcher.stop()
            await task
            await dispatcher.close()
        asyncio.run(run())

    thread = threading.Thread(target=dispatch, daemon=True)
    thread.start()
    try:
        queue.enqueue("order.close", {"order_id": 7}, id="close-7", delay=0.2)
        exec(_pull_snippet()[1], {"queue": queue})  # the snippet, as written
    finally:
        stop.set()
        thread.join(10)
    assert queue.get("close-7") is None  # reserved and acknowledged
    queue.close()


def test_the_comparison_does_not_deny_schedules_or_the_web_ui() -> None:
    """docs/comparison.md's "does not do" once said no cron and no web UI, both built since."""
    page = (ROOT / "docs" / "comparison.md").read_text()
    section = page.split("## What streamdelay does not do", 1)[1].split("\n## ", 1)[0]
    flat = " ".join(section.split()).lower()
    assert "no periodic" not in flat and "no web ui" not in flat and "cron" in flat
    assert "(schedules.md)" in section and "(dashboard.md)" in section
