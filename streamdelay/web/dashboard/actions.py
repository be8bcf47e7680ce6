"""The dashboard's actions: what each one does, the sentence its confirm step shows, and the one
``AsyncQueue`` call that performs it (docs/dashboard.md#actions).

Every action is a POST from the confirm page (with the CSRF token); the dashboard never changes
anything on a GET.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...base.durations import format_duration, parse_duration
from ...base.errors import ValidationError
from ...client.queue import AsyncQueue


@dataclass(frozen=True)
class Action:
    """One action: its button label and what its confirm step says (``{id}``, ``{topic}``,
    ``{queue}`` are filled in)."""

    name: str
    label: str
    on_job: str  # the confirm sentence for one job ("" when it takes no job id)
    on_topic: str  # the confirm sentence for a whole topic ("" when it needs a job id)
    scope: str  # the token scope it needs (docs/dashboard.md#actions)
    danger: bool = False
    on_worker: str = ""  # the confirm sentence for a worker process ({worker}); "" for others


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("cancel", "Cancel", "Remove job {id} from queue {queue}, whatever its state. It will "
           "not run; a run already started is aborted within about 1 s (an async handler is "
           "cancelled, a def handler sees job.aborted: docs/worker.md#abort).", "", "write",
           True),
    Action("run_now", "Run now", "Make job {id} due now: the dispatcher moves it to the "
           "{topic} stream at once and the next free worker runs it.", "", "write"),
    Action("reschedule", "Reschedule", "Give job {id} a new due time, counted from now on the "
           "Redis clock.", "", "write"),
    Action("replay", "Replay", "Put dead job {id} back as a new job of {topic}: attempts reset, "
           "due now.", "Put every dead job of topic {topic} back: attempts reset, due now.",
           "admin"),
    Action("purge", "Purge", "Forget dead job {id} for good.",
           "Forget every dead job of topic {topic} for good.", "admin", True),
    Action("pause", "Pause", "", "Stop workers starting jobs of topic {topic} (within 1 s; "
           "running ones finish; due jobs still become ready, so its lag grows).", "admin", True),
    Action("resume", "Resume", "", "Let workers start jobs of topic {topic} again.", "admin"),
    Action("quiet", "Quiet", "", "", "admin", True, "Worker {worker} takes no new jobs (within "
           "2 s) and finishes its running ones; it stays quiet until it stops, and its /readyz "
           "answers 503."),
    Action("stop", "Stop", "", "", "admin", True, "Worker {worker} begins its graceful "
           "shutdown (within 2 s), as on SIGTERM: it finishes its running jobs, then exits."),
)}


def action(name: str) -> Action:
    """The action called ``name``; ValidationError(field='action') for any other."""
    found = ACTIONS.get(name)
    if found is None:
        raise ValidationError(f"action: {name!r} is not one of {', '.join(ACTIONS)}",
                              field="action")
    return found


def confirm_text(name: str, queue: str, job_id: str | None, topic: str | None,
                 worker: str | None = None) -> str:
    """The sentence of the confirm step; ValidationError when the action needs what is
    missing (a job id, a topic, or a worker's name)."""
    act = action(name)
    if act.on_worker:
        if not worker:
            raise ValidationError(f"name: {act.label.lower()} needs a worker's name",
                                  field="name")
        return act.on_worker.format(worker=worker, queue=queue)
    template = act.on_job if job_id else act.on_topic
    if not template:
        needed = "id" if act.on_job else "topic"
        raise ValidationError(f"{needed}: {act.label.lower()} needs a {needed}", field=needed)
    return template.format(id=job_id, topic=topic or "its topic", queue=queue)


async def perform(q: AsyncQueue, name: str, job_id: str | None, topic: str | None,
                  delay: str | None = None, worker: str | None = None) -> str:
    """Do action ``name`` on ``q`` and say what happened (one line for the page)."""
    confirm_text(name, q.name, job_id, topic, worker)  # validates what the action needs
    result: Any
    if name in ("quiet", "stop"):  # docs/operations.md#quiet-and-stop
        asked = await (q.quiet_worker(worker or "") if name == "quiet"
                       else q.stop_worker(worker or ""))
        return (f"worker {worker} asked to {name} (it learns of it within 2 s)" if asked
                else f"worker {worker} was asked already")
    if name == "cancel":  # a running job is aborted too (docs/dashboard.md#actions)
        result = await q.cancel(job_id or "", abort=True)
        return f"job {job_id} cancelled" if result else f"job {job_id} was not there"
    if name in ("run_now", "reschedule"):
        seconds = 0.0 if name == "run_now" else parse_duration(delay or "", field="delay")
        result = await q.reschedule(job_id or "", delay=seconds)
        when = "now" if seconds == 0 else f"in {format_duration(seconds)}"
        return f"job {job_id} due {when}" if result else f"job {job_id} was not there"
    if name == "replay":
        count = await q.dead_replay(topic=None if job_id else topic, id=job_id)
        return f"{count} dead job{'s' if count != 1 else ''} replayed"
    if name == "purge":
        count = await q.dead_purge(topic=None if job_id else topic, id=job_id)
        return f"{count} dead job{'s' if count != 1 else ''} purged"
    paused = name == "pause"
    changed = await (q.pause(topic or "") if paused else q.resume(topic or ""))
    state = "paused" if paused else "resumed"
    return f"topic {topic} {state}" if changed else f"topic {topic} was {state} already"
