"""The Django integration's mappings (docs/integrations.md#django): Django's priorities onto
streamdelay's 0-9, and a stored error text back into a ``TaskError``."""

from __future__ import annotations

from streamdelay.contrib.django import task_results as results


def test_priorities_map_monotonically_onto_0_to_9_with_the_default_in_the_middle() -> None:
    levels = [results.priority_level(p) for p in range(-100, 101)]
    assert levels == sorted(levels)
    assert (levels[0], levels[-1]) == (0, 9)
    assert set(levels) == set(range(10))
    assert results.priority_level(0) == 5
    assert {results.priority_level(p) for p in range(1, 101)} == {6, 7, 8, 9}
    assert {results.priority_level(p) for p in range(-100, 0)} == {0, 1, 2, 3, 4}
    assert [results.priority_level(p) for p in (1, 25, 26, 100, -1, -20, -21, -100)] == [
        6, 6, 7, 9, 4, 4, 3, 0]


def test_error_text_names_the_exception_class() -> None:
    stored = ("shop.tasks.PaymentDeclined: order 2: over the limit\nTraceback (most recent "
              "call last):\n  File \"shop/tasks.py\", line 3, in charge\n    raise ...")
    error = results.task_error(stored)
    assert (error.exception_class_path, error.traceback) == ("shop.tasks.PaymentDeclined",
                                                             stored)
    assert results.task_error("KeyError: 'sku'").exception_class_path == "builtins.KeyError"
    assert results.task_error("HandlerTimeout: handler ran longer than 300s"
                              ).exception_class_path == "builtins.TimeoutError"
    assert results.task_error("Retry: later").exception_class_path == "streamdelay.Retry"
    assert results.task_error("settling failed: x").exception_class_path == (
        "builtins.Exception")
    assert results.task_error("Unheard: x").exception_class_path == "builtins.Exception"
