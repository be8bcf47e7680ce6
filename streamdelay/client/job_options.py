"""A job's options (priority, fairness key, expiry): their validation, the ``opts`` value the
enqueue scripts take, and the flag of staged topics (docs/keys.md#job-options).

A job without options (no key, no expiry, priority 5) has no ``opts`` value and goes through the
plain enqueue scripts (``enqueueJob`` / ``enqueueJobs``), so it pays nothing for them.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..base import validation
from ..base.models import Delay
from ..protocol.keys import PartitionKeys
from ..protocol.scripts import ScriptCall, script


class JobOptions(NamedTuple):
    """A job's id (``{key}<rest>`` for a keyed job) and its ``opts`` value ('' for none)."""

    id: str
    opts: str


def job_options(id: str | None, priority: int | None, key: str | None,
                expires: Delay | None) -> JobOptions:
    """Validate a job's options (fields ``priority``, ``key``, ``expires``, ``id``) and place a
    keyed job's id (``{key}<id>``, ``{key}<uuid hex>`` without one; docs/producer.md).

    The ``opts`` value is ``<priority>|<expires_ms>|<key>`` (expires relative to the due time:
    the script stores the deadline), '' when the job has none (priority 5, no key, no expiry).
    """
    level = validation.PRIORITY_DEFAULT if priority is None else validation.priority(priority)
    tag = "" if key is None else validation.fairness_key(key)
    expiry = "" if expires is None else str(validation.expires_ms(expires))
    if key is None:
        job_id = new_job_id() if id is None else validation.producer_job_id(id)
    else:
        job_id = validation.keyed_job_id(tag, id, uuid.uuid4().hex)
    if level == validation.PRIORITY_DEFAULT and not tag and not expiry:
        return JobOptions(job_id, "")
    return JobOptions(job_id, f"{level}|{expiry}|{tag}")


def new_job_id() -> str:
    """A fresh random job id (16 URL-safe characters)."""
    return secrets.token_urlsafe(12)


def is_staged(opts: str) -> bool:
    """True when a job's ``opts`` make its topic staged: a priority other than 5 or a key."""
    return bool(opts) and (opts[0] != "5" or not opts.endswith("|"))


class ParsedOptions(NamedTuple):
    """A stored ``opts`` field: priority, deadline (epoch ms, None) and key (None)."""

    priority: int
    deadline_ms: int | None
    key: str | None


def parse_options(value: Any) -> ParsedOptions:
    """Read a field of ``PREFIX opts`` (``<priority>|<deadline_ms>|<key>``); defaults for an
    empty or malformed one (a job without options)."""
    raw = value.decode() if isinstance(value, bytes) else str(value or "")
    level, _, rest = raw.partition("|")
    deadline, _, key = rest.partition("|")
    if len(level) != 1 or not level.isdigit() or not (deadline.isdigit() or not deadline):
        return ParsedOptions(validation.PRIORITY_DEFAULT, None, None)
    return ParsedOptions(int(level), int(deadline) if deadline else None, key or None)


def mark_staged_call(queue: str, topics: Iterable[str]) -> ScriptCall:
    """The ``markStaged`` call that flags ``topics`` in partition 0's ``staged`` hash (sent before
    the enqueue of a staged job on another partition, in the same round trip)."""
    return script("markStaged").call((PartitionKeys(queue, 0).staged,), sorted(set(topics)))
