"""Handler runs stamped by the Redis server clock, for the tests of what a limit promises
(docs/limits.md): never more than N runs at once, across processes and after a ``kill -9``.

A handler (a worker app's or a test's pull consumer) calls ``RUN`` as it starts and as it ends:
one script appends ``<start|end> <group> <run> <who> <server µs>`` to a list, so every record
of every process is ordered on the one server clock, and a start is stamped by the same call
that records it (no counter to put right by hand after a kill: a counter bumped by a process
killed before it wrote down what it bumped stays bumped, and a later run of its key then
counts as a second one at once). ``overlaps`` reads the runs back: a run with no end ends at
its process's kill (``killed``: the server time read after the ``SIGKILL`` was sent: a process
killed with -9 runs none of its code after that), else it is still running.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import NamedTuple

import redis

# the record and its server time in one step (docs: REDIS-NOTES, TIME inside a script is fine
# on Redis >= 5: effects are replicated, not the script)
RUN = """local t = redis.call('TIME')
local us = t[1] .. string.format('%06d', tonumber(t[2]))
redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. us)
return us"""
OPEN = 2**62  # the end of a run still going


class Run(NamedTuple):
    """One run: its group (a fairness key, a topic), its name (job id and attempt), the
    process or consumer that ran it, and its start and end on the server clock (µs)."""

    group: str
    run: str
    who: str
    start: int
    end: int


def server_us(client: redis.Redis) -> int:
    """The server clock now, in µs."""
    seconds, micros = client.time()
    return int(seconds) * 1_000_000 + int(micros)


def record(client: redis.Redis, log: str, what: str, group: str, run: str, who: str) -> None:
    """Append a ``start`` or ``end`` of ``run`` to ``log`` (what a sync consumer calls)."""
    client.eval(RUN, 1, log, f"{what} {group} {run} {who}")


def runs(client: redis.Redis, log: str, killed: Mapping[str, int] | None = None) -> list[Run]:
    """Every run recorded in ``log``; one with no end ends at ``killed[who]`` (its process's
    kill; a start stamped after it never ran) or is still going."""
    opened: dict[tuple[str, str, str], int] = {}
    found: list[Run] = []
    for raw in client.lrange(log, 0, -1):
        what, group, run, who, stamp = (raw.decode() if isinstance(raw, bytes) else raw).split()
        if what == "start":
            opened[(group, run, who)] = int(stamp)
        else:
            found.append(Run(group, run, who, opened.pop((group, run, who)), int(stamp)))
    for (group, run, who), start in opened.items():
        end = (killed or {}).get(who, OPEN)
        if start < end:
            found.append(Run(group, run, who, start, end))
    return found


def peaks(found: list[Run]) -> dict[str, int]:
    """The most runs of each group at once (an end and a start at the same µs: not at once)."""
    events: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in found:
        events[r.group] += [(r.start, 1), (r.end, -1)]
    best: dict[str, int] = {}
    for group, rows in events.items():
        now = top = 0
        for _, step in sorted(rows):  # at one µs the end (-1) sorts first
            now += step
            top = max(top, now)
        best[group] = top
    return best


def overlaps(found: list[Run], limit: int) -> list[list[Run]]:
    """The runs of a group that ran at once past ``limit``: each start that made it
    ``limit + 1``, with the runs going on then (for an assertion's message)."""
    bad = []
    for r in found:
        beside = [o for o in found
                  if o.group == r.group and o.start <= r.start < o.end and o is not r]
        if len(beside) >= limit:
            bad.append([*beside, r])
    return bad
