"""A chaos-run process: a worker (embedded dispatcher) or a standalone dispatcher.

Usage: ``python -m tests.chaos.app worker URL QUEUE HISTORY_DIR`` or
``python -m tests.chaos.app dispatch URL QUEUE``. Each handler run appends one JSON line
``{"id", "attempt", "due", "start", "pid"}`` to ``HISTORY_DIR/worker-<pid>.jsonl`` (flushed
before the handler returns, so a run recorded here happened even if the ack was lost).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import signal
import sys
import time
from pathlib import Path

import streamdelay as sd


def run_worker(url: str, queue_name: str, history_dir: str) -> None:
    """Serve the chaos topic until SIGTERM, recording every handler start."""
    queue = sd.Queue(queue_name, url=url, ttr=3, max_attempts=50, backoff=[0.2])
    worker = sd.Worker(queue, concurrency=32, shutdown_grace=5)
    out = (Path(history_dir) / f"worker-{os.getpid()}.jsonl").open("a", buffering=1)

    @worker.handler("chaos")
    async def handle(job: sd.Job) -> None:
        start = time.time() * 1000
        out.write(json.dumps({"id": job.id, "attempt": job.attempt, "due": job.due,
                              "start": start, "pid": os.getpid()}) + "\n")
        out.flush()
        await asyncio.sleep(random.uniform(0, 0.02))

    worker.run()


def run_dispatcher(url: str, queue_name: str) -> None:
    """Run a standalone dispatcher until SIGTERM."""
    dispatcher = sd.Dispatcher(sd.Queue(queue_name, url=url).config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, dispatcher.stop)
        await dispatcher.run()
        await dispatcher.close()

    asyncio.run(main())


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(process)d %(message)s")
    if sys.argv[1] == "worker":
        run_worker(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        run_dispatcher(sys.argv[2], sys.argv[3])
