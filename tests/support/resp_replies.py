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
from pathlib import Path
from typing import Any

import redis

from streamdelay.protocol.plan import Command
from streamdelay.redis_io.clients import async_client, sync_client
from streamdelay.redis_io.steps import run_step_async, run_step_sync

OUT = Path(__file__).resolve().parents[1] / "unit" / "resp_recorded.py"
S1, S2 = "rec:{r}s1", "rec:{r}s2"
# name -> the command; each read has a group of its own, so the order of recording is free
COMMANDS: dict[str, tuple[Any, ...]] = {
    "xreadgroup_two_streams": ("XREADGROUP", "GROUP", "g2", "c", "COUNT", 10,
                               "STREAMS", S1, S2, ">", ">"),
    "xreadgroup_one_entry": ("XREADGROUP", "GROUP", "g1", "c", "COUNT", 1, "STREAMS", S1, ">"),
    "xreadgroup_nothing": ("XREADGROUP", "GROUP", "g0", "c", "COUNT", 10, "BLOCK", 1,
                           "STREAMS", S2, ">"),
    "xread_two_streams": ("XREAD", "COUNT", 10, "STREAMS", S1, S2, "0-0", "0-0"),
    "xread_nothing": ("XREAD", "COUNT", 10, "BLOCK", 1, "STREAMS", S1, "$"),
    "xinfo_groups": ("XINFO", "GROUPS", S1),
    "xinfo_consumers": ("XINFO", "CONSUMERS", S1, "g1"),
    "xpending_range": ("XPENDING", S1, "g2", "-", "+", 10, "c"),
    "xrange": ("XRANGE", S1, "-", "+"),
    "zrevrange_withscores": ("ZREVRANGE", "rec:z", 0, -1, "WITHSCORES"),
    "hgetall": ("HGETALL", "rec:h"),
    "hgetall_missing": ("HGETALL", "rec:none"),
    "script_table": ("EVAL", "return {1, 'a', {2, 3}, 3.5, true, false}", 0),
}
# values that change from run to run (milliseconds since something): recorded as 0
VOLATILE = ("idle", "inactive", "time_since_delivered")


def fill(client: redis.Redis) -> None:
    """The keys the commands read: two streams of two entries with their groups (the group of
    ``xreadgroup_nothing`` starts at the end), a sorted set, a hash."""
    client.delete(S1, S2, "rec:z", "rec:h")
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
    steps = {name: Command(args) for name, args in COMMANDS.items()}
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
