"""One rule for a topic's own limit (docs/limits.md, ``lua/includes/limit_check.lua``): the
same limit state taken through each script that applies it - ``takeLimited`` (partition 0),
``takeStaged`` with the topic's limit (partition 0) and ``acquireLimit`` (the first step on a
partition other than 0) - gives the same decision (how many may start, why not more, how long
to wait) and leaves the same bucket and lease count behind. A copy of the rule that drifts in
one script fails here."""

from __future__ import annotations

from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(60)

TOPIC, GROUP = "t", "g"
HOUR = 3_600_000
LIVE = (600_000, 900_000)  # live leases end this long after the state is written (ms)


def server_ms(client: redis.Redis) -> int:
    """The Redis server clock in epoch ms."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


# name -> (limits field, live leases, expired leases, bucket (tokens, ts ahead?), wanted)
CASES: dict[str, tuple[str | None, int, int, tuple[str, bool] | None, int]] = {
    "no limit": (None, 0, 0, None, 5),
    "concurrency with room (expired leases dropped)": ("||4", 1, 2, None, 2),
    "concurrency full but one: the earliest lease is the wait": ("||3", 2, 1, None, 5),
    "concurrency 0": ("||0", 0, 0, None, 3),
    "rate: a new bucket is full": ("3|60000|", 0, 0, None, 5),
    "rate: part of a token, no refill yet": ("2|1000|", 0, 0, ("1.250000", True), 4),
    "rate: refilled to full long since": ("2|1000|", 0, 0, ("0.000000", False), 5),
    "rate: not one whole token": ("2|1000|", 0, 0, ("0.500000", True), 3),
    "rate: a wait in part of a ms is rounded up": ("3|1000|", 0, 0, ("1.500000", True), 2),
    "both, the rate tighter": ("1|1000|5", 1, 0, None, 4),
    "both, the concurrency tighter": ("10|1000|2", 1, 1, None, 4),
    "both, the concurrency full": ("10|1000|1", 1, 0, ("4.000000", True), 2),
}


def write_state(c: redis.Redis, keys: PartitionKeys, case: str) -> int:
    """A fresh limit state of ``case`` and a stream of 10 new entries; the lease end that
    bounds the wait (epoch ms, 0: no live lease)."""
    spec, live, expired, bucket, _ = CASES[case]
    c.delete(keys.limits, keys.bucket(TOPIC), keys.leases(TOPIC), keys.limit_wake(TOPIC),
             keys.stream(TOPIC))
    now = server_ms(c)
    if spec is not None:
        c.hset(keys.limits, TOPIC, spec)
    for i in range(expired):
        c.zadd(keys.leases(TOPIC), {f"old-{i}": 1 + i})
    for i in range(live):
        c.zadd(keys.leases(TOPIC), {f"live-{i}": now + LIVE[i]})
    if bucket is not None:
        tokens, ahead = bucket
        c.hset(keys.bucket(TOPIC), mapping={"tokens": tokens, "ts": now + HOUR if ahead else 1})
    c.xgroup_create(keys.stream(TOPIC), GROUP, id="$", mkstream=True)
    for i in range(10):  # plain entries: no record, so the staged take reads them as they are
        c.xadd(keys.stream(TOPIC), {"id": f"x{i}"})
    return now + LIVE[0] if live else 0


def take(c: redis.Redis, keys: PartitionKeys, path: str, wanted: int) -> tuple[int, int, int]:
    """(how many may start, reason, wait ms) as ``path`` decides for the state in Redis."""
    if path == "acquireLimit":
        granted, reason, wait, _ = run_step_sync(c, script("acquireLimit").call(
            [keys.limits], [TOPIC, wanted, "grant-1", 30_000]))
        return int(granted), int(reason), int(wait)
    args: list[Any] = [GROUP, "me", TOPIC, wanted] + (["1"] if path == "takeStaged" else [])
    entries, reason, wait, _ = run_step_sync(c, script(path).call(keys.script_keys(), args))
    return len(entries), int(reason), int(wait)


@pytest.mark.parametrize("case", list(CASES))
def test_every_take_applies_the_same_limit_rule(queue: sd.Queue, case: str) -> None:
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    seen: dict[str, tuple[object, ...]] = {}
    for path in ("takeLimited", "takeStaged", "acquireLimit"):
        lease_end = write_state(c, keys, case)
        before = server_ms(c)
        k, reason, wait = take(c, keys, path, CASES[case][4])
        after = server_ms(c)
        if reason == 2 and lease_end:  # until the earliest live lease ends, from the call's now
            assert lease_end - after <= wait <= lease_end - before, (path, wait)
            wait = -1
        bucket = c.hget(keys.bucket(TOPIC), "tokens")
        seen[path] = (k, reason, wait, bucket, c.zcard(keys.leases(TOPIC)))
    assert seen["takeStaged"] == seen["takeLimited"], case
    assert seen["acquireLimit"] == seen["takeLimited"], case
