"""The consumer side's names and timings, in one place (docs/worker.md, docs/pull.md)."""

from __future__ import annotations

import os
import socket
from secrets import token_hex

DEFAULT_GROUP = "workers"  # the group a Worker or a reserve call joins unless told otherwise
# How often a consumer re-reads the paused topics and the limits (a pause or a limit takes
# effect within about a second); a starting worker retries its first read this long.
REFRESH_S = 0.5
START_PATIENCE = 10.0
# Consumers of a group that own nothing and were silent this long are removed by workers and
# reserve callers (every PRUNE_EVERY_S) and by ``claim`` (which uses its ``min_idle`` instead
# when given).
PRUNE_IDLE_S = 3600.0
PRUNE_EVERY_S = 60.0
PRUNE_BATCH = 100
RECLAIM_EVERY_S = 1.0  # a worker's default reclaim_interval, and a reserve caller's
REQUEUE_BATCH = 200  # pending entries one requeueStuck call walks


def default_consumer_name() -> str:
    """``host-pid-random``: unique per process, readable in XINFO and logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{token_hex(2)}"
