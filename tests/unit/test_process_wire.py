"""The process executor's parts without processes (docs/worker.md#executors): its frames, the
text of a child's death, its settings and bad input, an error text carried across."""

from __future__ import annotations

import os
import signal

import pytest

from streamdelay.base.errors import ValidationError
from streamdelay.consume.error_text import describe_error
from streamdelay.consume.processes import ChildDied, ProcessSettings, executor_settings, wire
from streamdelay.consume.processes.child_outcomes import ChildError


def test_frames_round_trip() -> None:
    job = wire.RunJob("t", "id-1", wire.encode_body({"a": [1, 2]}), 10, 5, 1, 3, 60.0,
                      {"h": "v"}, "1-0", 0, 0, wire.encode_body({"step": 2}))
    assert wire.to_child(wire.encode(job)) == job
    assert wire.to_child(wire.encode(wire.Stop())) == wire.Stop()
    for message in (wire.Ready(12), wire.LoadFailed("boom"), wire.Progress(b"50"),
                    wire.Checkpoint(b'{"step":1}'), wire.Done(b'{"x":1}'), wire.Done(),
                    wire.Failed("retry", "later", 0.5)):
        assert wire.to_parent(wire.encode(message)) == message


def test_a_childs_death_names_the_signal_or_the_exit_code() -> None:
    assert "was killed by SIGKILL (signal 9)" in str(ChildDied(7, -signal.SIGKILL))
    assert "exited with code 3" in str(ChildDied(7, 3))
    died = ChildDied(7, -signal.SIGSEGV)
    assert describe_error(died).startswith("ChildDied: the handler's process (pid 7) was killed "
                                           "by SIGSEGV")
    assert "\n" not in describe_error(died)  # no frames of the worker's


def test_a_childs_error_text_is_kept_as_written() -> None:
    text = "ValueError: no\nTraceback (most recent call last):\n  File \"app.py\", line 3"
    assert describe_error(ChildError(text)) == text
    assert describe_error(ChildError(text), limit=10) == text[:10]


def test_settings() -> None:
    assert executor_settings("thread", None, None) is None
    assert executor_settings("process", None, None) == ProcessSettings(os.cpu_count() or 1)
    settings = executor_settings("process", 3, 100, 2.0)
    assert settings == ProcessSettings(3, 100, 2.0) and settings.slots == 6


@pytest.mark.parametrize(("options", "field"), [
    (("process", 0, None), "processes"), (("process", 1.5, None), "processes"),
    (("process", True, None), "processes"), (("fork", None, None), "executor"),
    (("threads", None, None), "executor"), (("thread", 2, None), "processes"),
    (("thread", None, 10), "max_jobs_per_child"), (("process", 2, 0), "max_jobs_per_child"),
    (("process", 2, None, -1), "abort_grace")])
def test_bad_settings_name_the_field(options: tuple[object, ...], field: str) -> None:
    with pytest.raises(ValidationError, match=f"^{field}: ") as raised:
        executor_settings(*options)
    assert raised.value.field == field
