"""Review of issue 39's round-3 script cuts (docs/keys.md#enqueue-from-another-language): each
test pins a contract a cut broke. Marked xfail (strict) until the fix lands: the fix removes
the mark, and a test that passes while marked fails the run."""

from __future__ import annotations

from typing import Any

import pytest

import streamdelay as sd
from streamdelay.io.clients import SyncClient
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(120)


def enqueue_jobs(client: SyncClient, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run ``enqueueJobs`` directly, as a client of another language would."""
    return run_step_sync(client, script("enqueueJobs").call(keys.script_keys(), args))


def test_a_shared_call_without_its_shared_values_is_bad_args(queue: sd.Queue) -> None:
    """The header's contract: a call whose ARGV do not fit the flag is 'SDERR BAD_ARGS'."""
    keys = PartitionKeys(queue.name, 0)
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        enqueue_jobs(queue.client, keys, [3_600_000, 0, "2", "t"])


def test_the_compact_reply_gives_the_due_time_stored(queue: sd.Queue) -> None:
    """Every due time stays below 2^53 ms, the bound the header gives for one number."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    delay = 8_000_000_000_000_000  # ms: the due time ~8.0e15, within 2^53 (9.007e15)
    wrong = []
    for k in range(60):  # the float error shows on about half the server clocks' µs
        created = enqueue_jobs(client, keys, [3_600_000, 0, "2", "t", "r", 30_000, 3,
                                              f"j{k}", delay, "b"])
        assert isinstance(created, int)
        stored = client.zscore(keys.delayed, f"j{k}")
        if stored != created + delay:
            wrong.append((created + delay, stored))
    assert wrong == []
