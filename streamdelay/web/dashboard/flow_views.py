"""The dashboard's workflow views, without I/O of their own but the reads they are given
(docs/workflows.md, docs/dashboard.md#workflows): a job's parents and children with their
states, shown on the job page and its live fragment (``relations``: ``get`` of each child and
``batch_info`` of each batch waiting for the job, one gather, at most ``MAX_SHOWN``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ...base.flows import BatchInfo
from ...base.models import JobInfo
from ...client.queue import AsyncQueue

MAX_SHOWN = 50  # children (and batches) whose state a job page reads


@dataclass(frozen=True)
class Relation:
    """One line of a job's workflow table: a parent, a child or a batch waiting for it."""

    kind: str  # "parent", "child" or "batch"
    id: str
    state: str
    href: str


def job_href(queue: str, job_id: str) -> str:
    """The job page of ``job_id``."""
    return f"/q/{quote(queue)}/job?id={quote(job_id, safe='')}"


def batch_href(queue: str, batch_id: str) -> str:
    """The batch page of ``batch_id``."""
    return f"/q/{quote(queue)}/batch?id={quote(batch_id, safe='')}"


def progress_text(info: BatchInfo) -> str:
    """``7 of 10 ended (6 succeeded, 1 dead), open``: a batch's progress in one line."""
    ended = info.succeeded + info.dead
    return f"{ended} of {info.total} ended ({info.succeeded} succeeded, {info.dead} dead), " \
           f"{info.state}"


async def relations(q: AsyncQueue, queue: str, info: JobInfo) -> list[Relation]:
    """The parents of ``info`` (with what each did, as its record says) and the jobs and
    batches waiting for it, each child with its state now (one gather)."""
    found = [Relation("parent", p, state, job_href(queue, p))
             for p, state in (info.parents or {}).items()]
    waiters = (info.children or [])[:MAX_SHOWN]
    if not waiters:
        return found
    reads: list[Any] = [q.batch_info(w[len("batch:"):]) if w.startswith("batch:") else q.get(w)
                        for w in waiters]
    answers = await asyncio.gather(*reads, return_exceptions=True)
    for waiter, answer in zip(waiters, answers, strict=True):
        if waiter.startswith("batch:"):
            bid = waiter[len("batch:"):]
            state = progress_text(answer) if isinstance(answer, BatchInfo) else "unknown"
            found.append(Relation("batch", bid, state, batch_href(queue, bid)))
        else:
            state = answer.state if isinstance(answer, JobInfo) else "gone"
            found.append(Relation("child", waiter, state, job_href(queue, waiter)))
    return found
