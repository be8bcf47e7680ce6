"""The text of a handler's error (consume/delivery.py ``describe_error``, docs/reliability.md
#dead-letters) and the dashboard's dead list row: pure, no server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from streamdelay.base.models import JobInfo
from streamdelay.client.listing import JobPage
from streamdelay.consume.error_text import describe_error
from streamdelay.protocol.deliveries import ERROR_TEXT_LIMIT
from streamdelay.web.dashboard import view_models as views

NOW = 1_800_000_000_000


def caught(fn: Callable[[], object]) -> BaseException:
    """The exception ``fn()`` raises."""
    try:
        fn()
    except BaseException as exc:  # any failure is what we describe
        return exc
    raise AssertionError("it did not raise")


def test_a_chained_failure_names_its_cause_after_the_frames() -> None:
    def fail() -> None:
        prices: dict[str, int] = {}
        try:
            prices["sku"]
        except KeyError as exc:
            raise RuntimeError("no price") from exc
    text = describe_error(caught(fail))
    lines = text.splitlines()
    assert lines[0] == "RuntimeError: no price"
    assert lines[-1] == "Caused by: KeyError: 'sku'"
    assert 'raise RuntimeError("no price") from exc' in text
    assert "^^^" not in text  # no caret lines: they spend the bound on nothing


def test_a_huge_message_keeps_room_for_the_innermost_frame() -> None:
    def fail() -> None:
        raise ValueError("x" * 10_000)
    text = describe_error(caught(fail))
    assert len(text) <= ERROR_TEXT_LIMIT
    assert text.startswith("ValueError: xxx") and "x..." in text.splitlines()[0]
    assert text.splitlines()[-1].strip() == 'raise ValueError("x" * 10_000)'


def test_an_unprintable_exception_is_still_described() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")
    text = describe_error(caught(lambda: (_ for _ in ()).throw(Odd())))
    assert text.splitlines()[0] == "Odd: <unprintable Odd object>"


def test_a_failure_with_no_frames_of_the_handler_keeps_its_innermost_frames() -> None:
    """A timeout raised by asyncio itself: every frame is the library's; shown, innermost."""
    async def late() -> None:
        await asyncio.wait_for(asyncio.sleep(1), 0.001)
    text = describe_error(caught(lambda: asyncio.run(late())))
    assert text.splitlines()[0].startswith("TimeoutError")
    assert 'File "' in text


def test_the_dashboards_dead_list_shows_when_a_job_died_and_whole_error_lines() -> None:
    error = ("ValueError: declined\nTraceback (most recent call last):\n"
             + '  File "/app/handlers.py", line 12, in charge\n    raise ValueError("declined")\n'
             * 5)
    info = JobInfo(id="j", topic="t", state="dead", due=NOW - 3_600_000, created=NOW - 3_700_000,
                   attempts=1, max_attempts=1, ttr=60.0, body=None, headers={}, error=error,
                   died=NOW - 60_000)
    [row] = views.page_view(JobPage([info]), NOW).rows
    assert row.due == views.moment(NOW - 60_000) and row.due_in == "1 m ago"
    assert len(row.error) <= views.ERROR_CHARS
    assert error.startswith(row.error) and error[len(row.error)] == "\n"  # cut at a line's end
