"""Never early at the millisecond boundary (docs/guarantees.md#on-time-by-the-server-clock): two
jobs due at T and T + 1 ms, and a ``promoteDue`` call whose own server clock reads exactly T
moves the first and not the second; no call before T moves either.

The server clock cannot be frozen, so the test calls ``promoteDue`` in a tight loop around T
(each call reports the ``TIME`` it read) and judges the call that read T; when no call happened
to read T (a scheduling hiccup skipped that millisecond) it tries again with a new T."""

from __future__ import annotations

import asyncio

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.test_dispatcher import server_ms

pytestmark = pytest.mark.timeout(60)
LEAD_MS = 30  # T is this far ahead of the enqueue: time to write both jobs first


async def _judge_one_boundary(queue: sd.Queue, dispatcher: sd.Dispatcher, round_: int
                              ) -> bool | None:
    """One try: None when no promote call read exactly T, else True (the check passed)."""
    keys = PartitionKeys(queue.name, 0)
    first, second = f"at-t-{round_}", f"at-t-plus-1-{round_}"
    t = server_ms(queue.client) + LEAD_MS
    # at is epoch seconds rounded up to the ms: T - 0.5 ms lands on T whatever the float error
    queue.enqueue("t", None, id=first, at=(t - 0.5) / 1000)
    queue.enqueue("t", None, id=second, at=(t + 0.5) / 1000)
    assert [queue.get(first).due, queue.get(second).due] == [t, t + 1]  # type: ignore[union-attr]
    while True:
        result = await dispatcher.promote_once(keys)
        if result.now < t:
            assert result.moved == 0, f"promoted at {result.now}, {t - result.now} ms early"
            continue
        if result.now > t:  # no call read exactly T: this round proves nothing
            await dispatcher.promote_once(keys)  # clear both before the next round
            return None
        assert result.moved == 1, f"the call at T moved {result.moved} jobs"
        states = (queue.get(first).state, queue.get(second).state)  # type: ignore[union-attr]
        assert states == ("ready", "delayed"), states
        return True


def test_a_promote_at_server_time_t_moves_the_job_due_at_t_and_not_the_one_due_at_t_plus_1(
        queue: sd.Queue) -> None:
    async def run() -> bool:
        dispatcher = sd.Dispatcher(queue.config)
        try:
            for round_ in range(30):
                if await _judge_one_boundary(queue, dispatcher, round_):
                    return True
            return False
        finally:
            await dispatcher.client.aclose()

    assert asyncio.run(run()), "no promote call read the boundary millisecond in 30 tries"
