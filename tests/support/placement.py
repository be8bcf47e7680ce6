"""Where each job is: every record must be in exactly one place (delayed set, topic stream or
dead-letter stream), the one its state names; and a way to fill Redis up (maxmemory reached)."""

from __future__ import annotations

from collections import Counter

import pytest
import redis

from streamdelay.protocol.keys import PartitionKeys

PLACE_OF_STATE = {"d": "delayed", "s": "stream", "x": "dead"}


def _ids_in(client: redis.Redis, key: str) -> Counter[str]:
    if client.type(key) != b"stream":
        return Counter()
    found: Counter[str] = Counter()
    for _, fields in client.xrange(key):
        found[fields[b"id"].decode()] += 1
    return found


def misplaced(client: redis.Redis, keys: PartitionKeys, topics: list[str]) -> dict[str, str]:
    """Job id -> what is wrong with where it is; empty when every job is in its one place."""
    in_stream: Counter[str] = Counter()
    in_dead: Counter[str] = Counter()
    for topic in topics:
        in_stream += _ids_in(client, keys.stream(topic))
        in_dead += _ids_in(client, keys.dead(topic))
    wrong: dict[str, str] = {}
    for raw_id, raw in client.hgetall(keys.jobs).items():
        job_id, state = raw_id.decode(), raw[:1].decode()
        places = Counter({"delayed": int(client.zscore(keys.delayed, job_id) is not None),
                          "stream": in_stream[job_id], "dead": in_dead[job_id]})
        where = [place for place, n in places.items() for _ in range(n)]
        if where != [PLACE_OF_STATE.get(state, "?")]:
            wrong[job_id] = f"state {state!r}, found in {where}"
    return wrong


def fill_up(client: redis.Redis) -> None:
    """Set maxmemory (noeviction) just below what Redis uses now, and check it refuses writes."""
    client.config_set("maxmemory-policy", "noeviction")
    used = int(client.info("memory")["used_memory"])
    limit = used - 64 * 1024
    while True:
        client.config_set("maxmemory", limit)
        try:
            client.set("sd-test-probe", "x" * 1000)
        except redis.OutOfMemoryError:
            return
        client.delete("sd-test-probe")
        limit //= 2
        if limit < 1024:
            pytest.fail("could not make Redis refuse writes")


def make_room(client: redis.Redis) -> None:
    """Lift the memory limit again."""
    client.config_set("maxmemory", 0)
