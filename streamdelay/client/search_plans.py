"""Search and bulk steering: find jobs by topic, state, error text or a body field, and cancel,
reschedule, replay or purge what a filter finds (docs/operations.md#search-and-bulk).

One plan, three faces: ``Queue.search`` / ``Queue.bulk`` (and the async ones), the HTTP routes
``/search`` and ``/jobs:bulk``, the CLI's ``jobs search`` / ``jobs bulk`` and the dashboard's
search page all drive ``search_plan`` and ``bulk_plan``.

**Bounded per call.** A call walks the listing of ``listing.py`` (``listJobs``, itself bounded by
rows, members examined and bytes) for at most ``scan`` jobs, filters them here, and returns the
matches with a cursor; the next call goes on from the cursor. A search over a backlog of ten
million jobs is thus many cheap calls, never one long one, and it can stop and resume anywhere.
A listing page that comes back short (a partition stopped early: a rare topic among others) or
a state with no job does not end the call: it lists on until ``scan`` jobs are examined, the
search ends, or it made ``EXTRA_CALLS`` listing calls more than one per ``PAGE`` and one per
state.

**One atomic script per job, one round trip per batch.** A bulk call sends, for every job it
matched, the same script the single-job operation uses (``cancelJob``, ``rescheduleJob``,
``replayDead``, ``purgeDead`` with the job's id), all in one pipeline. Each job changes
atomically; a job that changed between the scan and its script is handled by that script's
own rules (``replayDead`` and ``purgeDead`` act only on a job that is still dead).

**No job twice.** Cancel, purge and replay take the job out of the state scanned. A bulk
reschedule fixes its target due time on its first call (server clock) and carries it in the
cursor; a job already due at the target is skipped, so a rescheduled job met again further on
(later in the delayed set, or promoted back into its stream) is not moved again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ..base import validation
from ..base.errors import ValidationError
from ..base.models import At, Delay, JobInfo
from ..io.config import QueueConfig
from ..protocol.keys import PartitionKeys, partition_of
from ..protocol.plan import EachCall, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.scripts import ScriptCall, script
from .enqueuing import when_args
from .listing import STATES, ListState, timed_jobs_plan

BulkAction = Literal["cancel", "reschedule", "replay", "purge"]
ACTIONS: tuple[BulkAction, ...] = ("cancel", "reschedule", "replay", "purge")
SCAN = 1000  # jobs one call examines by default
MAX_SCAN = 10_000  # the most a caller may ask one call to examine
PAGE = 250  # jobs per listing page inside one call
# listing calls one search call may make beyond one per PAGE of ``scan`` and one per state: a
# listing page comes back short when a partition stopped early (a rare topic among others:
# docs/operations.md#search-and-bulk), and each extra call examines at most listing.SCAN
# members of each partition, so a call stays bounded when its topic holds few jobs
EXTRA_CALLS = 4
TEXT_MAX = 256  # the longest error text or body value a filter takes
# a target the bulk reschedule fixed itself may be in the past by the time a later call runs:
# then the job is simply due at once (includes/resolve_due.lua), never refused
_ANY_PAST_MS = 10 * 365 * 86_400_000


@dataclass(frozen=True)
class JobFilter:
    """What a search matches. ``state`` None: every state, delayed first, then ready, reserved,
    dead. ``error``: a piece of the last error, any case. ``body``: ``path=value`` pairs, all of
    which must hold (``customer.id=42``: a dotted path into a JSON or MessagePack map, a
    number for a list index; the value compared as text, JSON for numbers and booleans); a pair
    without ``=`` only asks that the path exists."""

    topic: str | None = None
    state: str | None = None
    error: str | None = None
    body: tuple[str, ...] = ()

    def validated(self) -> JobFilter:
        """The same filter, checked; ValidationError naming the field."""
        if self.state is not None and self.state not in STATES:
            raise ValidationError(f"state: {self.state!r} is not one of {', '.join(STATES)}",
                                  field="state")
        topic = None if not self.topic else validation.topic(self.topic)
        error = self.error or None
        if error is not None and len(error) > TEXT_MAX:
            raise ValidationError(f"error: at most {TEXT_MAX} characters", field="error")
        for pair in self.body:
            path = pair.partition("=")[0]
            if not path or len(pair) > TEXT_MAX or any(not p for p in path.split(".")):
                raise ValidationError(f"body: {pair[:40]!r} is not path=value (a dotted "
                                      f"path such as customer.id=42)", field="body")
        return JobFilter(topic, self.state, error, tuple(self.body))

    def matches(self, job: JobInfo) -> bool:
        """True when ``job`` passes the error and body tests (topic and state are the
        listing's)."""
        if self.error is not None and self.error.lower() not in (job.error or "").lower():
            return False
        return all(_body_has(job.body, pair) for pair in self.body)


_MISSING = object()


def _at_path(body: Any, path: str) -> Any:
    value = body
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part, _MISSING)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _body_has(body: Any, pair: str) -> bool:
    path, equals, wanted = pair.partition("=")
    value = _at_path(body, path)
    if value is _MISSING:
        return False
    if not equals:
        return True
    if isinstance(value, str):
        return value == wanted
    try:
        return bool(msgspec.json.encode(value).decode() == wanted)
    except (TypeError, msgspec.EncodeError):
        return False


@dataclass(frozen=True)
class SearchPage:
    """One call of ``Queue.search``: the matching jobs in listing order, how many jobs the call
    tested against the filter (``examined``), and the cursor of the next call (None: the
    search is complete)."""

    jobs: list[JobInfo] = field(default_factory=list)
    cursor: str | None = None
    examined: int = 0


@dataclass(frozen=True)
class BulkResult:
    """One call of ``Queue.bulk``: the jobs it matched (``ids``), how many of them the action
    changed (0 on a dry run), how many jobs it examined, and the cursor of the next call (None:
    done)."""

    action: str
    dry_run: bool
    matched: int
    changed: int
    examined: int
    cursor: str | None
    ids: list[str] = field(default_factory=list)


def _split_cursor(cursor: str | None, states: Sequence[ListState]) -> tuple[int, str | None]:
    """(index into ``states``, listing cursor) of a search cursor ``state:listing``."""
    if cursor is None:
        return 0, None
    state, _, rest = cursor.partition(":")
    if state not in states:
        raise ValidationError(f"cursor: {cursor[:60]!r} is not a cursor of this search; pass "
                              f"the cursor a call returned", field="cursor")
    return states.index(state), rest or None


def search_pages(cfg: QueueSpec, filt: JobFilter, scan: int, cursor: str | None
                 ) -> Plan[tuple[SearchPage, int]]:
    """One bounded search call (``search_plan``) and the server time of its last listing."""
    validation.positive_int(scan, "scan", MAX_SCAN)
    states: tuple[ListState, ...] = STATES if filt.state is None else (filt.state,)  # type: ignore[assignment]
    index, listing = _split_cursor(cursor, states)
    found: list[JobInfo] = []
    examined = calls = now = 0
    # a short listing page (or a state with no job) does not end the call: it goes on to
    # ``scan`` jobs examined, the end of the search, or its bound of listing calls
    budget = -(-scan // PAGE) + len(states) - index + EXTRA_CALLS
    while examined < scan and index < len(states) and calls < budget:
        size = min(PAGE, scan - examined)
        page, now = yield from timed_jobs_plan(cfg, states[index], filt.topic, size, listing)
        calls += 1
        examined += len(page.jobs)
        found.extend(job for job in page.jobs if filt.matches(job))
        listing = page.cursor
        if listing is None:
            index += 1
    next_cursor = None if index >= len(states) else f"{states[index]}:{listing or ''}"
    return SearchPage(found, next_cursor, examined), now


def search_plan(cfg: QueueSpec, filt: JobFilter, scan: int = SCAN,
                cursor: str | None = None) -> Plan[SearchPage]:
    """Examine at most ``scan`` jobs after ``cursor`` and answer those ``filt`` matches."""
    page, _ = yield from search_pages(cfg, filt.validated(), scan, cursor)
    return page


def _call(cfg: QueueSpec, action: BulkAction, job: JobInfo, target: int) -> ScriptCall:
    keys = PartitionKeys(cfg.name, partition_of(job.id, cfg.partitions)).script_keys()
    if action == "cancel":
        keep_ms = validation.delay_ms(cfg.keep_result, "keep_result")  # its waiters wake
        return script("cancelJob").call(keys, [job.id, keep_ms], durable=True)
    if action == "reschedule":
        keep_ms = validation.delay_ms(cfg.keep_result, "keep_result")  # a lost entry's waiters
        return script("rescheduleJob").call(keys, [job.id, "a", target, _ANY_PAST_MS, keep_ms],
                                              durable=True)
    if action == "replay":
        return script("replayDead").call(keys, [job.topic, 1, 0, job.id, cfg.partitions],
                                         durable=True)
    return script("purgeDead").call(keys, [job.topic, 1, job.id], durable=True)


def _changed(action: BulkAction, reply: Any) -> bool:
    if isinstance(reply, Exception):
        raise reply
    if action == "cancel":
        return bool(int(reply))
    if action == "reschedule":
        return bool(int(reply[0]))
    return bool(reply)


def bulk_filter(action: str, filt: JobFilter) -> JobFilter:
    """The filter a bulk ``action`` runs with: replay and purge act on dead jobs only (state
    dead when none is given), cancel and reschedule on one state the caller names."""
    if action not in ACTIONS:
        raise ValidationError(f"action: {action!r} is not one of {', '.join(ACTIONS)}",
                              field="action")
    checked = filt.validated()
    if action in ("replay", "purge"):
        if checked.state not in (None, "dead"):
            raise ValidationError(f"state: {action} acts on dead jobs only", field="state")
        return JobFilter(checked.topic, "dead", checked.error, checked.body)
    if checked.state is None:
        raise ValidationError(f"state: {action} by filter needs one state (delayed, ready, "
                              f"reserved or dead)", field="state")
    if action == "reschedule" and checked.state == "reserved":
        raise ValidationError("state: reschedule takes delayed, ready or dead jobs",
                              field="state")
    return checked


def bulk_plan(cfg: QueueSpec, action: str, filt: JobFilter, *, dry_run: bool = False,
              scan: int = SCAN, cursor: str | None = None, delay: Delay | None = None,
              at: At | None = None) -> Plan[BulkResult]:
    """One bounded call of a bulk ``action`` over the jobs ``filt`` matches after ``cursor``:
    search at most ``scan`` jobs, then (unless ``dry_run``) send the action's script for every
    match in one pipeline. ``delay`` / ``at``: the new due time of ``reschedule`` (neither:
    now)."""
    chosen: BulkAction = action  # type: ignore[assignment]
    checked = bulk_filter(action, filt)
    target: int | None = None
    if chosen == "reschedule" and cursor is not None and "|" in cursor:
        fixed, _, cursor = cursor.partition("|")
        if not fixed.isdigit():
            raise ValidationError("cursor: not a cursor of this bulk reschedule",
                                  field="cursor")
        target = None if dry_run else int(fixed)
    kind, when = when_args(delay, at) if chosen == "reschedule" else ("r", 0)
    page, now = yield from search_pages(cfg, checked, scan, cursor)
    if chosen == "reschedule" and target is None:
        target = when if kind == "a" else now + when
    jobs = page.jobs
    if chosen == "reschedule":
        jobs = [job for job in jobs if job.due != target]  # moved by an earlier call already
    changed = 0
    if jobs and not dry_run:
        replies = yield EachCall(tuple(_call(cfg, chosen, job, target or 0) for job in jobs))
        changed = sum(_changed(chosen, reply) for reply in replies)
    next_cursor = page.cursor
    if next_cursor is not None and chosen == "reschedule" and not dry_run:
        next_cursor = f"{target}|{next_cursor}"
    return BulkResult(chosen, dry_run, len(jobs), changed, page.examined, next_cursor,
                      [job.id for job in jobs])


class _Searching:
    config: QueueConfig  # the face's queue (the plans take its spec)


class SearchMethods(_Searching):
    """``search`` and ``bulk`` of ``Queue`` (blocking)."""

    def _operate(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    def search(self, *, topic: str | None = None, state: str | None = None,
               error: str | None = None, body: Sequence[str] = (), scan: int = SCAN,
               cursor: str | None = None) -> SearchPage:
        """Find jobs by topic, state, error text and body fields: one bounded call that
        examines at most ``scan`` jobs after ``cursor``; pass ``page.cursor`` to go on (None:
        complete). See ``JobFilter`` and docs/operations.md#search-and-bulk."""
        filt = JobFilter(topic, state, error, tuple(body))
        result: SearchPage = self._operate(search_plan(self.config, filt, scan, cursor))
        return result

    def bulk(self, action: str, *, topic: str | None = None, state: str | None = None,
             error: str | None = None, body: Sequence[str] = (), dry_run: bool = False,
             scan: int = SCAN, cursor: str | None = None, delay: Delay | None = None,
             at: At | None = None) -> BulkResult:
        """Cancel, reschedule, replay or purge the jobs a filter matches, one bounded call at a
        time (``dry_run``: count only); call again with ``result.cursor`` until it is None."""
        filt = JobFilter(topic, state, error, tuple(body))
        result: BulkResult = self._operate(bulk_plan(
            self.config, action, filt, dry_run=dry_run, scan=scan, cursor=cursor, delay=delay,
            at=at))
        return result


class AsyncSearchMethods(_Searching):
    """``search`` and ``bulk`` of ``AsyncQueue``."""

    async def _operate(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    async def search(self, *, topic: str | None = None, state: str | None = None,
                     error: str | None = None, body: Sequence[str] = (), scan: int = SCAN,
                     cursor: str | None = None) -> SearchPage:
        """Find jobs by filter, one bounded call; see ``Queue.search``."""
        filt = JobFilter(topic, state, error, tuple(body))
        result: SearchPage = await self._operate(search_plan(self.config, filt, scan, cursor))
        return result

    async def bulk(self, action: str, *, topic: str | None = None, state: str | None = None,
                   error: str | None = None, body: Sequence[str] = (), dry_run: bool = False,
                   scan: int = SCAN, cursor: str | None = None, delay: Delay | None = None,
                   at: At | None = None) -> BulkResult:
        """Act on the jobs a filter matches, one bounded call; see ``Queue.bulk``."""
        filt = JobFilter(topic, state, error, tuple(body))
        result: BulkResult = await self._operate(bulk_plan(
            self.config, action, filt, dry_run=dry_run, scan=scan, cursor=cursor, delay=delay,
            at=at))
        return result
