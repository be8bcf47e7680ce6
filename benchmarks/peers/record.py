"""What every peer's no-op handler does: append ``job id, wall-clock time`` to a file.

The file path comes from ``BENCH_RECORDS`` (set by the benchmark for the worker process it
starts). One ``os.write`` on an ``O_APPEND`` descriptor per job: atomic for a short line, safe
from threads and forked children, and no Redis traffic, so it skews neither the Redis memory
nor the Redis CPU of the library under test. Kept free of heavy imports: worker processes of
every peer import it.
"""

from __future__ import annotations

import os
import time
from typing import Any

PAD = "x" * 70  # {"id": "j12345", "pad": "xxx..."} is ~100 bytes of JSON
_fd: int | None = None
_pid = 0


def body(job_id: str) -> dict[str, Any]:
    """The ~100 B job body every library gets: our job id and padding."""
    return {"id": job_id, "pad": PAD}


def record(job_id: str) -> None:
    """Append ``<job id> <epoch seconds>`` to the records file (the no-op handler's only work)."""
    now = time.time()
    global _fd, _pid
    if _fd is None or _pid != os.getpid():
        _fd = os.open(os.environ["BENCH_RECORDS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        _pid = os.getpid()
    os.write(_fd, f"{job_id} {now:.6f}\n".encode())


def url() -> str:
    """The Redis URL of the run (``BENCH_URL``)."""
    return os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
