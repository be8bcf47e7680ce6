"""A chaos-run process: a worker (embedded dispatcher) or a standalone dispatcher.

Usage: ``python -m tests.system.chaos.app worker URL QUEUE HISTORY_DIR`` or
``python -m tests.system.chaos.app dispatch URL QUEUE``. Each handler run appends one JSON line
``{"id", "attempt", "due", "start", "pid", "intact", "size"}`` to
``HISTORY_DIR/worker-<pid>.jsonl`` (flushed before the handler returns, so a run recorded here
happened even if the ack was lost). ``intact`` says the body is the one ``job_body`` made for
that id (its number, and the SHA-256 of its padding for the 64 KiB-1 MiB bodies).
``CHAOS_KEEP_DONE`` (seconds, default 0) is the workers' ``keep_done``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import signal
import sys
import time
from pathlib import Path

import streamdelay as sd

BODY_OVERHEAD = 256  # room for the JSON around the padding, under the 1 MiB body limit


def job_id(number: int) -> str:
    """The id of chaos job ``number``."""
    return f"c{number}"


def job_body(number: int, pad_chars: int, rng: random.Random) -> dict[str, object]:
    """The body of job ``number``: ``{"n"}``, plus ``pad`` (random hex, ``pad_chars`` long) and
    its SHA-256 ``sha`` when ``pad_chars`` > 0."""
    if pad_chars <= 0:
        return {"n": number}
    pad = rng.randbytes((pad_chars + 1) // 2).hex()[:pad_chars]
    return {"n": number, "pad": pad, "sha": hashlib.sha256(pad.encode()).hexdigest()}


def body_intact(job: sd.Job) -> tuple[bool, int]:
    """Whether ``job.body`` is what ``job_body`` made for its id, and its padding size."""
    body = job.body
    if not isinstance(body, dict) or not isinstance(body.get("n"), int):
        return False, 0
    if job_id(body["n"]) != job.id:
        return False, 0
    pad = body.get("pad")
    if pad is None:
        return "sha" not in body, 0
    digest = hashlib.sha256(str(pad).encode()).hexdigest()
    return digest == body.get("sha"), len(str(pad))


def run_worker(url: str, queue_name: str, history_dir: str) -> None:
    """Serve the chaos topic until SIGTERM, recording every handler start."""
    queue = sd.Queue(queue_name, url=url, ttr=3, max_attempts=50, backoff=[0.2],
                     keep_done=float(os.environ.get("CHAOS_KEEP_DONE", "0")))
    worker = sd.Worker(queue, concurrency=32, shutdown_grace=5)
    out = (Path(history_dir) / f"worker-{os.getpid()}.jsonl").open("a", buffering=1)

    @worker.handler("chaos")
    async def handle(job: sd.Job) -> None:
        start = time.time() * 1000
        intact, size = body_intact(job)
        out.write(json.dumps({"id": job.id, "attempt": job.attempt, "due": job.due,
                              "start": start, "pid": os.getpid(), "intact": intact,
                              "size": size}) + "\n")
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
