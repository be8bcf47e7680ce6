"""A connection kept aside for the one-call steps of a synchronous queue (``Queue.enqueue``),
and its asyncio twin for a dispatcher's promote calls (``AsyncLane``).

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

import asyncio
import contextlib
import os
import socket
import threading
from typing import Any

import redis
import redis.asyncio
from redis.exceptions import NoScriptError, ResponseError
from redis.utils import HIREDIS_AVAILABLE

from ..protocol.scripts import ScriptCall
from .calls import RETRYABLE, evalsha_args, map_error
from .clients import plain_pool

if HIREDIS_AVAILABLE:  # packs every command of the clients of clients.py (packing.py)
    import hiredis

_POSIX = os.name == "posix"  # a socket is a file descriptor that os.write takes (_send)
MISSED = object()  # the lane did not send the call (or has no reply for it): go the ordinary way
_forks = [0]  # forks this process came through: a lane's connection belongs to one generation


def _forked() -> None:
    _forks[0] += 1


os.register_at_fork(after_in_child=_forked)  # cheaper than os.getpid() (a system call) per call


class Lane:
    """One held connection of a plain client's pool, for one caller at a time (thread-safe:
    a second thread finds the lane busy and goes the ordinary way)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Any = None
        self._conn: Any = None
        self._fork = _forks[0]
        self._head: tuple[Any, ...] = ()  # script, keys, ARGV[1], that part packed

    def call(self, client: Any, call: ScriptCall) -> Any:
        """The reply of ``call``, sent on the held connection; ``MISSED`` when the lane stepped
        aside. A script's refusal is raised as the ordinary path raises it (``map_error``)."""
        pool = getattr(client, "connection_pool", None)
        if not plain_pool(pool) or not self._lock.acquire(False):  # False: do not block
            return MISSED  # a cluster or Sentinel pool, or another thread on the lane
        try:
            conn = self._conn
            if conn is None or self._pool is not pool or self._fork != _forks[0]:
                self._pool, self._fork = pool, _forks[0]
                conn = self._conn = pool.get_connection()  # kept: pool.disconnect() closes it
            try:
                return _round_trip(conn, self._packed(conn, call))
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

    def _packed(self, conn: Any, call: ScriptCall) -> list[bytes]:
        """``call`` packed as the connection packs it (by hiredis), the part that repeats from
        one call to the next (``EVALSHA``, the digest, the keys and the first argument: a
        queue's partition and tolerance for ``enqueueJob``) packed once and kept."""
        args = call.args
        if not HIREDIS_AVAILABLE or len(args) < 2:
            return conn.pack_command(*evalsha_args(call))  # type: ignore[no-any-return]
        head = self._head
        if (not head or head[0] is not call.script or head[1] is not call.keys
                or type(head[2]) is not type(args[0]) or head[2] != args[0]):
            packed = _pack_args(("EVALSHA", call.script.sha, len(call.keys), *call.keys,
                                 args[0]))
            if packed is None:
                return conn.pack_command(*evalsha_args(call))  # type: ignore[no-any-return]
            head = self._head = (call.script, call.keys, args[0], packed)
        tail = _pack_args(args[1:])
        if tail is None:  # a value hiredis does not take (bytearray, ...): redis-py's way
            return conn.pack_command(*evalsha_args(call))  # type: ignore[no-any-return]
        count = 3 + len(call.keys) + len(args)
        return [b"".join((b"*%d\r\n" % count, head[3], tail))]

    def _drop(self) -> None:
        conn, pool, self._conn = self._conn, self._pool, None
        if conn is not None:
            conn.disconnect()
            pool.release(conn)


def _pack_args(args: tuple[Any, ...]) -> memoryview | None:
    """``args`` packed by hiredis as a RESP array's elements (without the array's header);
    None for a value it does not take."""
    try:
        packed = hiredis.pack_command(args)
    except TypeError:
        return None
    return memoryview(packed)[packed.index(b"\n") + 1:]


def _round_trip(conn: Any, packed: list[bytes]) -> Any:
    """Send ``packed`` on ``conn`` and read its reply, a refusal raised. Straight on the
    connection's socket and reply parser when it has them (connected), without the checks of
    redis-py's ``send_packed_command`` and ``read_response`` that a held connection sending one
    call at a time does not need (what they cost: docs/benchmarks.md, History 2026-11-29);
    a timeout or connection trouble raises as an
    ``OSError`` or redis-py's ``ConnectionError``, which drops the lane's connection."""
    sock, parser = getattr(conn, "_sock", None), getattr(conn, "_parser", None)
    if sock is None or parser is None:  # not connected (or another redis-py): its own way
        conn.send_packed_command(packed, check_health=False)
        return conn.read_response()
    if len(packed) == 1 and type(sock) is socket.socket and _POSIX:
        _send(sock, packed[0])
    else:
        for chunk in packed:
            sock.sendall(chunk)
    reply = parser.read_response()
    if isinstance(reply, ResponseError):
        raise reply
    return reply


def _send(sock: socket.socket, data: bytes) -> None:
    """``sock.sendall(data)`` that first writes straight to the socket: a socket with a
    timeout (non-blocking underneath) waits in ``poll`` for room before every send, a system
    call per one-job enqueue that the room the buffer nearly always has makes useless (what
    it costs: docs/benchmarks.md, History 2026-11-29). What the buffer does not take goes
    through ``sendall``, within the socket's timeout, as before; the reply is read as before
    (a wait bounded by the socket's timeout whatever signals interrupt it)."""
    try:
        sent = os.write(sock.fileno(), data)
    except BlockingIOError:  # no room now (a socket without a timeout waits in write instead)
        sent = 0
    if sent < len(data):
        sock.sendall(memoryview(data)[sent:])


class AsyncLane:
    """One held connection of a plain asyncio client's pool, for the calls of one task at a
    time (a dispatcher's partition loop): the same rules as ``Lane``, on an event loop. A call
    made while another is in flight, or on another event loop, goes the ordinary way."""

    def __init__(self) -> None:
        self._busy = False
        self._pool: Any = None
        self._conn: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._packed_call: ScriptCall | None = None
        self._packed: Any = None

    async def call(self, client: Any, call: ScriptCall) -> Any:
        """The reply of ``call``, sent on the held connection; ``MISSED`` when the lane stepped
        aside. A script's refusal is raised as the ordinary path raises it (``map_error``)."""
        pool = getattr(client, "connection_pool", None)
        if not plain_pool(pool) or self._busy:
            return MISSED  # a cluster or Sentinel pool, or another task on the lane
        self._busy = True
        try:
            conn, loop = self._conn, asyncio.get_running_loop()
            if conn is None or self._pool is not pool or self._loop is not loop:
                # a connection of another pool or loop is left to them (their close ends it)
                self._pool, self._loop = pool, loop
                conn = self._conn = await pool.get_connection()
            try:
                if call is not self._packed_call:  # a loop sends the same call again and again
                    self._packed_call, self._packed = call, conn.pack_command(*evalsha_args(call))
                await conn.send_packed_command(self._packed, check_health=False)
                return await conn.read_response()
            except ResponseError as exc:  # a reply was read: the connection is fine
                if isinstance(exc, (NoScriptError, *RETRYABLE)):
                    return MISSED
                raise map_error(call, exc) from exc
            except BaseException:  # connection trouble, a timeout, a cancel: nothing left
                self._conn = None  # half-read behind; the caller sends the call the ordinary way
                await _dropped(pool, conn)
                raise
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return MISSED
        finally:
            self._busy = False


async def _dropped(pool: Any, conn: Any) -> None:
    """Close a lane's connection and give it back to its pool (a fresh one is taken next);
    raises nothing, so the error that dropped it is the one its caller sees."""
    with contextlib.suppress(Exception):
        await conn.disconnect()
    with contextlib.suppress(Exception):  # a pool reset since no longer knows it
        await pool.release(conn)
