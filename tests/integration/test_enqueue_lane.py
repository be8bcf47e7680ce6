"""``Queue.enqueue`` sends its one script call on a held connection of the client's pool
(``io/lane.py``); whatever happens to that connection, the call goes the ordinary way and
every job is written once."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

import streamdelay as sd
from streamdelay.io.lane import _send
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(120)


def lane_client_id(queue: sd.Queue) -> int:
    """The server-side id of the lane's connection (the one that sent the last EVALSHA)."""
    for client in queue.client.client_list():
        if client["cmd"] == "evalsha":
            return int(client["id"])
    raise AssertionError(queue.client.client_list())


def test_enqueue_uses_one_held_connection(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="a", delay=60)
    first = lane_client_id(queue)
    for i in range(20):
        queue.enqueue("t", i, id=f"b{i}", delay=60)
    assert lane_client_id(queue) == first
    assert queue.get("b19") is not None


def test_a_killed_lane_connection_costs_no_job(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="a", delay=60)
    queue.client.client_kill_filter(_id=lane_client_id(queue))
    second = queue.enqueue("t", 2, id="b", delay=60)
    assert second.created
    third = queue.enqueue("t", 3, id="c", delay=60)  # the lane is back on a new connection
    assert third.created
    assert [queue.get(i) is not None for i in "abc"] == [True, True, True]


def test_a_flushed_script_cache_is_loaded_again(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="a", delay=60)
    queue.client.script_flush()
    assert queue.enqueue("t", 2, id="b", delay=60).created
    assert queue.enqueue("t", 3, id="c", delay=60).created
    assert not queue.enqueue("t", 4, id="c", delay=60).created  # taken: through enqueueJobs


def test_a_script_refusal_still_raises_through_the_lane(queue: sd.Queue) -> None:
    with pytest.raises(sd.ValidationError) as refused:
        queue.enqueue("t", 1, id="old", at=1.0)
    assert refused.value.field == "at"
    assert queue.enqueue("t", 1, id="new", delay=60).created


def test_threads_share_one_queue(queue: sd.Queue) -> None:
    results: list[sd.EnqueueResult] = []
    lock = threading.Lock()

    def produce(n: int) -> None:
        for i in range(150):
            result = queue.enqueue("t", i, id=f"t{n}-{i}", delay=60)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 600 and all(r.created for r in results)
    assert queue.stats().topics["t"].delayed == 600


def test_a_closed_queue_opens_a_new_lane(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="a", delay=60)
    queue.close()
    assert queue.enqueue("t", 2, id="b", delay=60).created
    assert queue.get("b") is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_does_not_use_the_parents_connection(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="parent-1", delay=60)
    pid = os.fork()
    if pid == 0:  # the child: its own connection, the parent's left alone
        code = 1
        try:
            code = 0 if queue.enqueue("t", 2, id="child", delay=60).created else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert queue.enqueue("t", 3, id="parent-2", delay=60).created
    assert {i: queue.get(i) is not None for i in ("parent-1", "child", "parent-2")} == {
        "parent-1": True, "child": True, "parent-2": True}


def test_a_restarted_server_is_ridden_out(own_redis: RedisServer) -> None:
    with sd.Queue("lane", url=own_redis.url, retry_for=20) as queue:
        queue.enqueue("t", 1, id="a", delay=60)
        own_redis.kill()  # the lane's connection dies with it
        own_redis.start()
        assert queue.enqueue("t", 2, id="b", delay=60).created
        assert queue.get("b") is not None


def test_a_read_only_moment_is_waited_out(own_redis: RedisServer) -> None:
    """``READONLY`` (a primary turned replica during a failover) is a reply on a sound
    connection: the call goes the ordinary way, whose retry policy waits it out."""
    with sd.Queue("lane", url=own_redis.url, retry_for=20) as queue:
        queue.enqueue("t", 1, id="a", delay=60)
        admin = own_redis.client()
        admin.replicaof("127.0.0.1", 1)  # a primary nobody answers at: read-only until undone
        undo = threading.Timer(0.5, lambda: own_redis.client().replicaof("NO", "ONE"))
        undo.start()
        try:
            assert queue.enqueue("t", 2, id="b", delay=60).created
        finally:
            undo.join()
        assert queue.get("b") is not None


def test_a_frozen_server_still_times_out(own_redis: RedisServer) -> None:
    """A server that stops answering fails the lane's call (whose send skips the socket's
    ``poll``, ``lane._send``) in about the time it did, with the error it raised."""
    assert own_redis.process is not None
    with sd.Queue("lane", url=own_redis.url, socket_timeout=0.3, retry_for=0.5) as queue:
        queue.enqueue("t", 1, id="a", delay=60)
        own_redis.process.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(sd.ConnectionFailed):
                queue.enqueue("t", 2, id="b", delay=60)
            assert time.monotonic() - started < 10
        finally:
            own_redis.process.send_signal(signal.SIGCONT)
        assert queue.enqueue("t", 3, id="c", delay=60).created
        assert queue.get("c") is not None


def test_a_send_larger_than_the_socket_buffer_arrives_whole() -> None:
    """``_send`` writes what the buffer takes, then the rest within the socket's timeout."""
    left, right = socket.socketpair()
    with left, right:
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        left.settimeout(5.0)  # non-blocking underneath, as redis-py's sockets are
        data = os.urandom(1 << 20)
        got = bytearray()

        def read() -> None:
            while len(got) < len(data):
                got.extend(right.recv(65536))

        reader = threading.Thread(target=read)
        reader.start()
        _send(left, data)
        reader.join(10)
        assert bytes(got) == data


def test_a_send_to_a_full_buffer_still_times_out() -> None:
    left, right = socket.socketpair()
    with left, right:
        left.settimeout(0.2)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            _send(left, os.urandom(16 << 20))  # nobody reads
        assert time.monotonic() - started < 5
