"""A connection kept aside for the one-call steps of a synchronous queue (``Queue.enqueue``).

redis-py's ``execute_command`` takes a connection from the pool for every command and checks it
for unread data (a ``poll`` per call), then puts it back: ~12 µs of a ~30 µs round trip on the
benchmark machine (docs/benchmarks.md#what-bounds-the-figures). A lane takes one connection of
the client's own pool once and sends single script calls on it directly. Anything but a reply or
a script's refusal (connection trouble, a timeout, ``NOSCRIPT``, ``READONLY`` and the other
replies the retry policy waits out, a busy lane, a forked process, a cluster or Sentinel client,
a durable call) makes it step aside: the connection is dropped and
the step goes the ordinary way (``runner.run_with_retry_sync``: pool, retry policy, script load).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

from ..protocol.scripts import ScriptCall
from .calls import RETRYABLE, evalsha_args, map_error

MISSED = object()  # the lane did not send the call (or has no reply for it): go the ordinary way


class Lane:
    """One held connection of a plain client's pool, for one caller at a time (thread-safe:
    a second thread finds the lane busy and goes the ordinary way)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Any = None
        self._conn: Any = None
        self._pid = os.getpid()

    def call(self, client: Any, call: ScriptCall) -> Any:
        """The reply of ``call``, sent on the held connection; ``MISSED`` when the lane stepped
        aside. A script's refusal is raised as the ordinary path raises it (``map_error``)."""
        pool = getattr(client, "connection_pool", None)
        if type(pool) is not redis.ConnectionPool or not self._lock.acquire(blocking=False):
            return MISSED  # a cluster or Sentinel pool, or another thread on the lane
        try:
            conn = self._conn
            if conn is None or self._pool is not pool or self._pid != os.getpid():
                self._pool, self._pid = pool, os.getpid()
                conn = self._conn = pool.get_connection()  # kept: pool.disconnect() closes it
            try:
                conn.send_packed_command(conn.pack_command(*evalsha_args(call)),
                                         check_health=False)
                return conn.read_response()
            except ResponseError as exc:  # a reply was read: the connection is fine
                if isinstance(exc, (NoScriptError, *RETRYABLE)):  # script cache, failover, ...:
                    return MISSED  # the ordinary path loads the script or waits it out
                raise map_error(call, exc) from exc
            except BaseException:  # connection trouble, a timeout, an interrupt: nothing left
                self._drop()  # half-read behind; the caller sends the call the ordinary way
                raise
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return MISSED
        finally:
            self._lock.release()

    def _drop(self) -> None:
        conn, pool, self._conn = self._conn, self._pool, None
        if conn is not None:
            conn.disconnect()
            pool.release(conn)
