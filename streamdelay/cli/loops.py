"""The loops of the commands that run until stopped: the dispatcher of ``streamdelay dispatch``
(until SIGINT/SIGTERM) and the stats refresh of ``streamdelay stats --watch`` (until Ctrl-C).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time

import click

from ..base.errors import ConnectionFailed
from ..base.masking import mask_url
from ..client.queue import Queue
from ..dispatch.dispatcher import Dispatcher
from ..io.config import QueueConfig
from .output import stats_json, stats_text

log = logging.getLogger("streamdelay.cli")

DISPATCH_STOP_GRACE = 2.0


async def serve_dispatcher(config: QueueConfig) -> int:
    """Run a dispatcher until SIGINT/SIGTERM; returns how many jobs it promoted."""
    dispatcher = Dispatcher(config)
    task = asyncio.ensure_future(dispatcher.run())
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        dispatcher.stop()
        if signals == 1:  # a loop stuck retrying an unreachable Redis is cancelled after a grace
            log.info("stopping")
            loop.call_later(DISPATCH_STOP_GRACE, task.cancel)
        else:
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        with contextlib.suppress(Exception):
            await dispatcher.close()
    return dispatcher.promoted


def watch_stats(queue: Queue, interval: float, as_json: bool) -> None:
    """Refresh the stats table every ``interval`` seconds until Ctrl-C."""
    live = sys.stdout.isatty() and not as_json
    first = True
    while True:
        try:
            stats = queue.stats()
            body = stats_json(stats) if as_json else stats_text(stats)
        except ConnectionFailed as exc:
            if first:
                raise
            body = f"redis unreachable ({exc}); retrying"
        first = False
        if live:
            click.clear()
            stamp = time.strftime("%H:%M:%S")
            click.echo(f"queue {queue.name} at {mask_url(queue.config.url)}  {stamp}  "
                       f"(every {interval:g}s, Ctrl-C to stop)\n")
        elif not as_json:  # a log or a pipe: each table says when it was read (JSON has "now")
            click.echo(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} queue {queue.name}")
        click.echo(body + ("" if as_json or live else "\n"))
        time.sleep(interval)
