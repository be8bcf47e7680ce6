"""One typed parser per script reply: fields by name, never ``reply[3]`` at a call site.

Each parser turns the raw reply of one Lua script (as its header in ``lua/`` documents it) into a
small frozen dataclass. They are pure, so the fast tests feed them recorded replies
(tests/unit/test_replies.py); ``text`` is the one bytes-to-str helper of the package.

A URL may ask for RESP3 (``?protocol=3``, docs/scale-out.md#urls). A script's reply is the same
on both (a Lua table stays an array), but redis-py hands some plain commands' replies over in
another shape: every stream reply is read by ``protocol/streams.py``, and the two other shapes
(``field_map``: a hash or an entry's fields; ``scored_members``: a ``WITHSCORES`` range) below;
every reader of those replies goes through them (tests/unit/test_resp_replies.py and
tests/unit/test_streams.py feed them replies recorded on both).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..base.models import EnqueueState

# What a record's state letter means (docs/keys.md); '?' is enqueueJobs's word for a record it
# cannot parse. A job in its stream ('s') is 'ready' or 'reserved': getJob tells which; 'r' is
# ready in a staged topic's lane (docs/priorities.md); 'w' waits for its parents
# (docs/workflows.md).
STATE_NAMES: dict[str, EnqueueState] = {"d": "delayed", "s": "ready", "r": "ready", "x": "dead",
                                         "c": "done", "?": "corrupt", "w": "waiting"}


def text(value: Any) -> str:
    """A reply value as str: bytes decoded as UTF-8, anything else through ``str``."""
    return value.decode() if isinstance(value, bytes) else str(value)


def lenient_text(value: Any) -> str:
    """Like ``text``, for bytes that may not be UTF-8 (ids written by foreign clients)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def texts(values: Iterable[Any]) -> list[str]:
    """Every value of a reply list as str."""
    return [text(v) for v in values]


# --- the reply normalisers: RESP2 and RESP3 shapes ----------------------------------------

def field_map(reply: Any) -> dict[str, str]:
    """A field map from a reply that redis-py gives as a dict or a flat list (HGETALL, XRANGE)."""
    if isinstance(reply, dict):
        return {text(k): text(v) for k, v in reply.items()}
    return {text(reply[i]): text(reply[i + 1]) for i in range(0, len(reply), 2)}


def scored_members(reply: Any) -> list[tuple[Any, float]]:
    """``(member, score)`` of a ``Z*RANGE ... WITHSCORES`` reply: a flat member/score list on
    RESP2, ``[member, score]`` pairs on RESP3 (a map from some redis-py callbacks)."""
    if isinstance(reply, dict):
        return [(member, float(score)) for member, score in reply.items()]
    if reply and isinstance(reply[0], (list, tuple)):
        return [(pair[0], float(pair[1])) for pair in reply]
    return [(reply[i], float(reply[i + 1])) for i in range(0, len(reply) - 1, 2)]


@dataclass(frozen=True)
class PromoteReply:
    """``promoteDue``: how many moved, the next due time, the server clock, what was dropped."""

    moved: int
    next_due_ms: int  # -1 when the delayed set is empty
    now_ms: int
    dropped: list[tuple[str, str]]  # (job id, reason) of due ids not promoted
    now_us: int  # the same clock reading as now_ms, in microseconds
    schedule_at_ms: int = -1  # when the earliest schedule wants firing (-1: none, or not asked)


def parse_promote(reply: Any) -> PromoteReply:
    """Parse ``{moved, next_due_ms, now_ms, dropped, now_us[, schedule_at_ms]}``."""
    moved, next_due, now, dropped, now_us = reply[:5]
    return PromoteReply(int(moved), int(next_due), int(now),
                        [(lenient_text(job_id), lenient_text(why)) for job_id, why in dropped],
                        int(now_us), int(reply[5]) if len(reply) > 5 else -1)


@dataclass(frozen=True)
class TopicRow:
    """One ``readStats`` row: a topic's counts in one partition."""

    topic: str
    delayed: int
    in_stream: int  # ready plus reserved
    reserved: int
    dead: int
    oldest_due_ms: int  # due time of the oldest undelivered entry, -1 when none
    group: str  # '' when no group serves the topic


@dataclass(frozen=True)
class StatsReply:
    """``readStats``: the server clock, the delayed set's head and one row per topic."""

    now_ms: int
    head_due_ms: int  # -1 when nothing is delayed
    head_topic: str
    rows: list[TopicRow]


def parse_stats(reply: Any) -> StatsReply:
    """Parse ``{now_ms, head_due_ms, head_topic, rows...}``."""
    rows = [TopicRow(text(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]), text(r[6]))
            for r in reply[3:]]
    return StatsReply(int(reply[0]), int(reply[1]), text(reply[2]), rows)


@dataclass(frozen=True)
class RequeueReply:
    """``requeueStuck``: where to go on, and which ids moved back, went dead or were cleaned."""

    cursor: str  # '0-0' when the pending list was walked to its end
    moved: list[str]
    dead: list[str]
    cleaned: int

    @property
    def done(self) -> bool:
        """True when the walk is over."""
        return self.cursor == "0-0"


def parse_requeue(reply: Any) -> RequeueReply:
    """Parse ``{next_cursor, moved ids, dead ids, cleaned count}``."""
    return RequeueReply(text(reply[0]), texts(reply[1]), texts(reply[2]), int(reply[3]))


@dataclass(frozen=True)
class JobReply:
    """``getJob``: the raw record and, for a job in its stream, where it is."""

    record: bytes
    substate: str  # 'ready', 'reserved', 'corrupt' or ''
    owner: str
    idle_ms: int
    deliveries: int
    error: str


def parse_job(reply: Any) -> JobReply | None:
    """Parse ``{record, substate, owner, idle_ms, deliveries, error, now_ms}`` (None: no job)."""
    if reply is None:
        return None
    raw, sub, owner, idle, deliveries, error = reply[:6]
    return JobReply(raw, text(sub), text(owner), int(idle or 0), int(deliveries or 0), text(error))


class ListedRow(NamedTuple):
    """One row of a ``listJobs`` reply: its position (delayed: due and job id; the streams:
    entry id and topic), the job id, and the ``getJob``-shaped rest."""

    pos1: Any
    pos2: Any
    job_id: str
    job: JobReply


class ListReply(NamedTuple):
    """``listJobs``: the server time, where the partition's walk stopped (None: it has
    nothing beyond the rows; else the last position examined, as ``(pos1, pos2)``), and the
    rows."""

    now_ms: int
    reached: tuple[Any, Any] | None
    rows: list[ListedRow]


def parse_list(reply: Any) -> ListReply:
    """Parse ``{now_ms, reached, rows...}``; each row ``{pos1, pos2, job id, record, substate,
    owner, idle_ms, deliveries, error}``."""
    rows = []
    for row in reply[2:]:
        pos1, pos2, job_id, raw, sub, owner, idle, deliveries, error = row[:9]
        rows.append(ListedRow(pos1, pos2, text(job_id), JobReply(
            raw, text(sub), text(owner), int(idle or 0), int(deliveries or 0), text(error))))
    reached = (reply[1][0], reply[1][1]) if reply[1] else None
    return ListReply(int(reply[0]), reached, rows)


class EnqueueRow(NamedTuple):
    """One job's value of an ``enqueueJobs`` reply, parsed (a named tuple: cheap to build)."""

    created: bool
    due_ms: int
    state: EnqueueState  # the state of the job now under the id ("delayed" when created)


def _state_name(raw: Any) -> EnqueueState:
    return STATE_NAMES.get(text(raw), "corrupt")


def enqueue_row(value: Any) -> EnqueueRow:
    """One job's value of an ``enqueueJobs`` reply: its due time in epoch ms (an integer) when
    it was created, else ``'<state>:<due_ms>'`` of the job now under the id."""
    if type(value) is int:
        return EnqueueRow(True, value, "delayed")
    state, _, due = text(value).partition(":")
    return EnqueueRow(False, int(due or 0), _state_name(state))


def parse_enqueue(reply: Any) -> list[EnqueueRow]:
    """Parse an ``enqueueJobs`` reply: one value per job (see ``enqueue_row``)."""
    return [enqueue_row(value) for value in reply]


@dataclass(frozen=True)
class FailReply:
    """``failJob``: what became of the delivery."""

    outcome: int  # 0 no current job, 1 retried later, 2 dead

    @property
    def retried(self) -> bool:
        """The job waits for its next attempt."""
        return self.outcome == 1

    @property
    def dead(self) -> bool:
        """The job went to the dead-letter stream."""
        return self.outcome == 2


def parse_fail(reply: Any) -> FailReply:
    """Parse ``{outcome, ...}``."""
    return FailReply(int(reply[0]))


@dataclass(frozen=True)
class RescheduleReply:
    """``rescheduleJob``: whether the job was found, and its new due time."""

    found: bool
    due_ms: int | None


def parse_reschedule(reply: Any) -> RescheduleReply:
    """Parse ``{1, due_ms}`` (rescheduled) or ``{0}`` (no such job)."""
    found = bool(int(reply[0]))
    return RescheduleReply(found, int(reply[1]) if found and len(reply) > 1 else None)
