"""Review of issue 39's round-3 script cuts (docs/keys.md#enqueue-from-another-language): each
test pins a contract a cut broke. Marked xfail (strict) until the fix lands: the fix removes
the mark, and a test that passes while marked fails the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.io.clients import SyncClient
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(120)


def enqueue_jobs(client: SyncClient, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run ``enqueueJobs`` directly, as a client of another language would."""
    return run_step_sync(client, script("enqueueJobs").call(keys.script_keys(), args))


def test_a_shared_call_without_its_shared_values_is_bad_args(queue: sd.Queue) -> None:
    """The header's contract: a call whose ARGV do not fit the flag is 'SDERR BAD_ARGS'."""
    keys = PartitionKeys(queue.name, 0)
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        enqueue_jobs(queue.client, keys, [3_600_000, 0, "2", "t"])


def test_the_compact_reply_gives_the_due_time_stored(queue: sd.Queue) -> None:
    """Every due time stays below 2^53 ms, the bound the header gives for one number."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    delay = 8_000_000_000_000_000  # ms: the due time ~8.0e15, within 2^53 (9.007e15)
    wrong = []
    for k in range(60):  # the float error shows on about half the server clocks' µs
        created = enqueue_jobs(client, keys, [3_600_000, 0, "2", "t", "r", 30_000, 3,
                                              f"j{k}", delay, "b"])
        assert isinstance(created, int)
        stored = client.zscore(keys.delayed, f"j{k}")
        if stored != created + delay:
            wrong.append((created + delay, stored))
    assert wrong == []


# The producer of test_a_frozen_server_fails_a_one_job_enqueue_under_a_periodic_signal: a
# process with a signal handler that fires every 50 ms (an interval timer, as a sampling
# profiler or a watchdog sets one), whose one-job enqueue meets a frozen server.
_PRODUCER = """
import os, signal, sys, time
import streamdelay as sd
url, pid = sys.argv[1], int(sys.argv[2])
signal.signal(signal.SIGALRM, lambda *_: None)
with sd.Queue("lane", url=url, socket_timeout=0.3, retry_for=0.5) as queue:
    queue.enqueue("t", 1, id="a", delay=60)  # the lane holds its connection from here
    os.kill(pid, signal.SIGSTOP)
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    started = time.monotonic()
    try:
        queue.enqueue("t", 2, id="b", delay=60)
    except sd.ConnectionFailed:
        print("ConnectionFailed", round(time.monotonic() - started, 1), flush=True)
"""


def test_a_frozen_server_fails_a_one_job_enqueue_under_a_periodic_signal(
    own_redis: RedisServer
) -> None:
    """socket_timeout bounds a call whatever signals the process handles meanwhile."""
    assert own_redis.process is not None
    pid = own_redis.process.pid
    producer = subprocess.Popen([sys.executable, "-c", _PRODUCER, own_redis.url, str(pid)],
                                stdout=subprocess.PIPE, text=True)
    try:
        out, _ = producer.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        producer.kill()
        out, _ = producer.communicate()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert out.startswith("ConnectionFailed"), f"still waiting after 20 s: {out!r}"


@pytest.mark.parametrize("flag", [["0"], ["2", "t", "r", 30_000, 3]])
def test_an_empty_call_that_purges_refuses_a_foreign_jobs_key_by_name(
    queue: sd.Queue, flag: list[Any]
) -> None:
    """docs/keys.md#calling-a-script: a partition key of another type the call would read or
    write is refused by name (SDERR WRONG_TYPE), before any write."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    client.zadd(keys.done, {"gone": 1})  # an expired tombstone: the purge reads its record
    client.set(keys.jobs, "foreign")
    with pytest.raises(sd.ScriptError) as refused:
        enqueue_jobs(client, keys, [3_600_000, 60_000, *flag])
    assert f"key {keys.jobs} holds a string" in str(refused.value)
    assert client.zrange(keys.done, 0, -1) == [b"gone"]
