"""Enqueue without the streamdelay package: what a producer in another language does.

Only a Redis client and a MessagePack encoder are used (redis-py and msgspec stand in for the
libraries of your language). See docs/keys.md for the format.
"""

import os
import re
import uuid
import zlib
from pathlib import Path

import msgspec
import redis

LUA_DIR = Path(__file__).resolve().parents[2] / "lua"  # the scripts of this source tree


def assemble(name: str) -> str:
    """The script text: each ``-- @include x`` line replaced by ``lua/includes/x.lua``."""
    text = (LUA_DIR / name).read_text()
    return re.sub(r"^-- @include ([a-z_]+)\s*$",
                  lambda m: (LUA_DIR / "includes" / f"{m.group(1)}.lua").read_text(),
                  text, flags=re.MULTILINE)


def partition_keys(queue: str, job_id: str, partitions: int = 1) -> list[str]:
    """The six KEYS of the job's partition: crc32(id) % partitions picks the hash tag."""
    tag = f"{queue}#{zlib.crc32(job_id.encode()) % partitions}"
    return [f"sd:{{{tag}}}:{name}" for name in
            ("delayed", "jobs", "wake", "counts", "groups", "done")]


client = redis.Redis.from_url(os.environ.get("STREAMDELAY_URL", "redis://localhost:6379/0"))
enqueue = client.register_script(assemble("enqueueJobs-6.lua"))  # EVALSHA, loads on NOSCRIPT

job_id = "close-" + uuid.uuid4().hex[:8]
body = b'{"order_id": 42}'  # JSON text of the body; format "j"
blob = msgspec.msgpack.encode(["j", body, {"traceparent": "00-abc-def-01"}])
argv: list[str | int | bytes] = [
    3_600_000, 0, "0",  # past tolerance ms, keep_done ms, no job options
    # id, topic, when_kind ("r" relative), when_ms, ttr_ms, max_attempts, replace, blob
    job_id, "order.close", "r", 1500, 60_000, 10, "0", blob,
]
# one value per job: its due time (an integer) when created, else b"<state>:<due_ms>" of the
# job that holds the id (nothing written)
(due_ms,) = enqueue(keys=partition_keys("orders", job_id), args=argv)
print(f"enqueued {job_id}: created, due_ms={due_ms}")
(again,) = enqueue(keys=partition_keys("orders", job_id), args=argv)
state, _, existing_due = again.decode().partition(":")
print(f"enqueued {job_id} again: taken, state={state}, due_ms={existing_due}")

# One new job at a time: enqueueJob (the same call without keep_done and replace) answers the
# due time, or 0 when the id is taken (nothing written: ask enqueueJobs, as above, what exists).
enqueue_one = client.register_script(assemble("enqueueJob-6.lua"))
one_id = "close-" + uuid.uuid4().hex[:8]
one_argv = [3_600_000, one_id, "order.close", "r", 1500, 60_000, 10, blob]
due_ms = enqueue_one(keys=partition_keys("orders", one_id), args=one_argv)
print(f"enqueued one {one_id}: due_ms={due_ms}")
taken = enqueue_one(keys=partition_keys("orders", one_id), args=one_argv)
print(f"enqueued one {one_id} again: {taken}")
