"""A consumer and operator written against the Python client that openapi-python-client
generates from a live ``/openapi.json`` (tests/test_web_generated_client.py).

Run as ``python generated_client_flow.py BASE_URL TOKEN QUEUE`` with the generated
``streamdelay_client`` package on the path; the test also type-checks this file and the package
with ``mypy --strict``, so every field the document marks required is a plain value here (no
``Unset`` to narrow), error codes and job states are enums, and the queue is a plain string.
Prints ``ok`` when enqueue -> reserve -> ack and fail -> dead went as documented.
"""

from __future__ import annotations

import sys

from streamdelay_client import AuthenticatedClient, Client
from streamdelay_client.api.consumers import ack, fail, reserve
from streamdelay_client.api.operators import get_job, list_dead, stats
from streamdelay_client.api.producers import enqueue
from streamdelay_client.api.service import healthz
from streamdelay_client.models import (
    EnqueueBody,
    EnqueueResultState,
    ErrorBody,
    ErrorDetailCode,
    FailBody,
    JobInfo,
    JobInfoState,
    ReserveAnswer,
    ReserveBody,
    SettledOutcome,
)

TOPIC = "generated.flow"


def take_one(client: AuthenticatedClient, queue: str) -> str:
    """Reserve the one ready job of TOPIC (the service's dispatcher makes it ready); its
    receipt."""
    answer = reserve.sync(queue, TOPIC, client=client,
                          body=ReserveBody(group="generated", wait_ms=5000, count=1))
    assert isinstance(answer, ReserveAnswer), answer
    assert len(answer.deliveries) == 1, answer
    delivery = answer.deliveries[0]
    assert delivery.topic == TOPIC and delivery.attempt == 1
    return delivery.receipt


def main(base_url: str, token: str, queue: str) -> None:
    """The flow; an AssertionError says which step went wrong."""
    health = healthz.sync(client=Client(base_url=base_url))  # security: [] -> no token
    assert health is not None and health.status == "ok", health

    with AuthenticatedClient(base_url=base_url, token=token, timeout=None) as client:
        created = enqueue.sync(queue, client=client,
                               body=EnqueueBody(topic=TOPIC, body={"n": 1}, id="acked"))
        assert not isinstance(created, ErrorBody) and created is not None, created
        assert created.created and created.state is EnqueueResultState.DELAYED
        settled = ack.sync(queue, take_one(client, queue), client=client)
        assert settled is not None and not isinstance(settled, ErrorBody), settled
        assert settled.outcome is SettledOutcome.ACKED
        gone = get_job.sync(queue, "acked", client=client)
        assert isinstance(gone, ErrorBody) and gone.error.code is ErrorDetailCode.NO_SUCH_JOB

        enqueue.sync(queue, client=client, body=EnqueueBody(
            topic=TOPIC, body={"n": 2}, id="failed", max_attempts=1))
        outcome = fail.sync(queue, take_one(client, queue), client=client,
                            body=FailBody(error="card declined"))
        assert outcome is not None and not isinstance(outcome, ErrorBody), outcome
        assert outcome.outcome is SettledOutcome.DEAD
        dead = get_job.sync(queue, "failed", client=client)
        assert isinstance(dead, JobInfo) and dead.state is JobInfoState.DEAD
        last_error: str | None = dead.error  # required: a value or null, never Unset
        assert last_error is not None and "card declined" in last_error
        letters = list_dead.sync(queue, client=client, topic=TOPIC)
        assert letters is not None and not isinstance(letters, ErrorBody), letters
        assert [(job.id, job.error) for job in letters.jobs] == [("failed", "card declined")]

        counts = stats.sync(queue, client=client)
        assert counts is not None and not isinstance(counts, ErrorBody), counts
        topic = counts.topics[TOPIC]
        paused: bool = topic.paused
        leases: int = topic.leases
        assert (topic.dead, topic.ready, topic.reserved, paused, leases) == (1, 0, 0, False, 0)

        other = stats.sync(queue + "-not-served", client=client)
        assert isinstance(other, ErrorBody) and other.error.code is \
            ErrorDetailCode.NO_SUCH_QUEUE, other
    print("ok")


if __name__ == "__main__":
    main(*sys.argv[1:4])
