"""Replies of the plain commands whose shape redis-py changes with the protocol, recorded from a
real server through streamdelay's own step runner (the asyncio lean round trip a Worker reads
with, or the synchronous path): what the reply normalisers of ``streamdelay/protocol/replies.py``
read (docs/scale-out.md#urls).

``python -m tests.support.resp_replies`` starts a redis-server, records every command of
``COMMANDS`` on RESP2, RESP3 (``?protocol=3``) and, where redis-py has it (8.x), its unified
shapes (``&legacy_responses=false``), and writes tests/unit/resp_recorded.py, which the unit
tests read without a server. tests/integration/test_resp3.py records again on the test's server
and checks the normalisers read the live replies as they read the stored ones.
"""

from __future__ import annotations

import asyncio
import pprint
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from streamdelay.io.clients import async_client, sync_client
from streamdelay.io.steps import run_step_async, run_step_sync
from streamdelay.protocol import streams
from streamdelay.protocol.plan import Command
from streamdelay.protocol.replies import field_map, scored_members, text

OUT = Path(__file__).resolve().parents[1] / "unit" / "resp_recorded.py"
S1, S2, S3 = "rec:{r}s1", "rec:{r}s2", "rec:{r}s3"
# name -> the command (every stream command as protocol/streams.py builds it); each read has a
# group of its own, so the order of recording is free up to the claims, which move entries to
# consumer d (after every read of the pending lists); the writes go to a stream of their own
COMMANDS: dict[str, Command] = {
    "xreadgroup_two_streams": streams.read_group("g2", "c", [S1, S2], 10),
    "xreadgroup_one_entry": streams.read_group("g1", "c", [S1], 1),
    "xreadgroup_nothing": streams.read_group("g0", "c", [S2], 10, block_ms=1),
    "xreadgroup_own_pending": streams.read_group("g2", "c", [S1], 10, ids=["0-0"]),
    "xread_two_streams": streams.read([S1, S2], ["0-0", "0-0"], 10),
    "xread_nothing": streams.read([S1], ["$"], 10, block_ms=1),
    "xinfo_groups": streams.info_groups(S1),
    "xinfo_consumers": streams.info_consumers(S1, "g1"),
    "xinfo_stream": streams.info_stream(S1),
    "xpending_range": streams.pending_range(S1, "g2", 10, "c"),
    "xpending_range_idle": streams.pending_range(S1, "g2", 10, min_idle_ms=0),
    "xpending_summary": streams.pending_summary(S1, "g2"),
    "xpending_summary_empty": streams.pending_summary(S2, "g0"),
    "xrange": streams.entries_range(S1),
    "xrange_one": streams.entries_range(S1, "2-1", "2-1"),
    "xrange_missing": streams.entries_range(S1, "9-1", "9-1"),
    "xrevrange": streams.entries_back(S1, count=10),
    "xlen": streams.length(S1),
    "xclaim": streams.claim(S1, "g2", "d", 0, ["1-1"]),
    "xclaim_justid": streams.claim(S1, "g2", "d", 0, ["2-1"], just_id=True),
    "xautoclaim": streams.autoclaim(S1, "g1", "d", 0, count=10),
    "xgroup_create": streams.group_create(S3, "g", "0", mkstream=True),
    "xadd": streams.add(S3, {"f": "v"}, "1-1"),
    "xadd_capped": streams.add(S3, {"f": "w"}, "2-1", maxlen=10),
    "xack": streams.ack(S3, "g", ["1-1"]),
    "xdel": streams.delete(S3, ["1-1"]),
    "xtrim": streams.trim(S3, maxlen=0),
    "xgroup_setid": streams.group_set_id(S3, "g", "0-0"),
    "xgroup_delconsumer": streams.group_delete_consumer(S3, "g", "nobody"),
    "xgroup_destroy": streams.group_destroy(S3, "g"),
    "zrevrange_withscores": Command(("ZREVRANGE", "rec:z", 0, -1, "WITHSCORES")),
    "hgetall": Command(("HGETALL", "rec:h")),
    "hgetall_missing": Command(("HGETALL", "rec:none")),
    "script_table": Command(("EVAL", "return {1, 'a', {2, 3}, 3.5, true, false}", 0)),
}
def reader(name: str) -> Callable[[Any], Any]:
    """The reader of the recorded reply ``name``, by its command: protocol/streams.py's for
    the stream commands, protocol/replies.py's for the other shapes, else the reply as is."""
    readers: list[tuple[str, Callable[[Any], Any]]] = [
        ("xreadgroup", streams.read_reply), ("xread_", streams.read_reply),
        ("xinfo_stream", streams.stream_info), ("xinfo", streams.info_rows),
        ("xpending_range", streams.pending_rows),
        ("xpending_summary", streams.pending_summary_of),
        ("xclaim_justid", streams.claimed_ids), ("xautoclaim", streams.autoclaimed),
        ("xrange", streams.entries), ("xrevrange", streams.entries),
        ("xclaim", streams.entries), ("xadd", text),
        ("xgroup_create", streams.ok), ("xgroup_setid", streams.ok),
        ("xlen", streams.integer), ("xack", streams.integer), ("xdel", streams.integer),
        ("xtrim", streams.integer), ("xgroup_", streams.integer),
        ("zrevrange", scored_members), ("hgetall", field_map)]
    return next((read for prefix, read in readers if name.startswith(prefix)), _as_is)


def _as_is(reply: Any) -> Any:
    return reply


# values that change from run to run (milliseconds since something): recorded as 0
VOLATILE = ("idle", "inactive", "time_since_delivered")


def fill(client: redis.Redis) -> None:
    """The keys the commands read: two streams of two entries with their groups (the group of
    ``xreadgroup_nothing`` starts at the end), a sorted set, a hash."""
    client.delete(S1, S2, S3, "rec:z", "rec:h")
    for stream in (S1, S2):
        client.xadd(stream, {"f": "v", "x": "1"}, id="1-1")
        client.xadd(stream, {"f": "w"}, id="2-1")
        for group in ("g1", "g2"):
            client.xgroup_create(stream, group, id="0")
    client.xgroup_create(S2, "g0", id="$")
    client.zadd("rec:z", {"alpha": 3, "beta": 1.5})
    client.hset("rec:h", mapping={"a": "1", "b": "2"})


def _name(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def steady(reply: Any) -> Any:
    """``reply`` with the ``VOLATILE`` values as 0 (a map's, or a flat list's)."""
    if isinstance(reply, dict):
        return {k: 0 if _name(k) in VOLATILE else steady(v) for k, v in reply.items()}
    if isinstance(reply, list) and reply and not isinstance(reply[0], (list, tuple, dict)):
        return [0 if i % 2 and _name(reply[i - 1]) in VOLATILE else v
                for i, v in enumerate(reply)]
    if isinstance(reply, (list, tuple)):
        return type(reply)(steady(v) for v in reply)
    return reply


def record(server_url: str, options: str, asyncio_path: bool = True) -> dict[str, Any]:
    """Every command of ``COMMANDS`` on a client of ``server_url + options`` (keys filled
    afresh first), through the asyncio lean round trip or the synchronous step runner."""
    fill(redis.Redis.from_url(server_url))
    url = server_url + options
    steps = COMMANDS
    if not asyncio_path:
        client = sync_client(url, 5.0)
        try:
            return {name: steady(run_step_sync(client, step)) for name, step in steps.items()}
        finally:
            client.close()

    async def run() -> dict[str, Any]:
        client = async_client(url, 5.0)
        try:
            return {name: steady(await run_step_async(client, step))
                    for name, step in steps.items()}
        finally:
            await client.aclose()

    return asyncio.run(run())


SHAPES = {"RESP2": "?protocol=2", "RESP3": "?protocol=3",
          "UNIFIED": "?protocol=3&legacy_responses=false"}


def write() -> None:
    """Record on a fresh redis-server and write ``OUT``."""
    from tests.support.redis_server import RedisServer

    with RedisServer() as server:
        recorded = {name: record(server.url, options) for name, options in SHAPES.items()}
    lines = [
        f'"""Replies recorded from redis-server {_server_version()} by redis-py '
        f"{redis.__version__}\nthrough streamdelay's step runner (the asyncio lean round trip), "
        "written by\n``python -m tests.support.resp_replies`` (tests/support/resp_replies.py). "
        "UNIFIED is redis-py\n8's ``legacy_responses=false``. Do not edit by hand.\"\"\"\n",
        "from typing import Any\n",
        f"REDIS_PY = {redis.__version__!r}  # the raw shapes are redis-py's: see test_resp3.py\n",
    ]
    for name, replies in recorded.items():
        lines.append(f"{name}: dict[str, Any] = {{")
        for command, reply in replies.items():  # the server's order of maps kept
            text = pprint.pformat(reply, width=90, sort_dicts=False).replace("\n", "\n        ")
            lines.append(f"    {command!r}:\n        {text},")
        lines.append("}\n")
    OUT.write_text("\n".join(lines))


def _server_version() -> str:
    import subprocess

    from tests.support.redis_server import server_command

    return subprocess.run([server_command(), "--version"], capture_output=True, text=True,
                          check=True).stdout.split()[2].removeprefix("v=")


if __name__ == "__main__":
    write()
    sys.stdout.write(f"wrote {OUT}\n")
