"""Bad options, durations and topics refused before any connection: a ``StreamdelayError`` naming
the field. The same at the public entry points that reach a server, nothing written:
tests/integration/test_validation.py."""

from __future__ import annotations

from typing import Any

import pytest

import streamdelay as sd
from streamdelay.base.durations import parse_duration
from streamdelay.io.config import QueueConfig

pytestmark = pytest.mark.timeout(60)


def assert_names(exc: BaseException, field: str) -> None:
    """The error is ours, says which field is wrong, and carries it."""
    assert isinstance(exc, sd.StreamdelayError), f"{type(exc).__name__}: {exc}"
    assert str(exc).startswith(f"{field}:"), str(exc)
    assert exc.field == field


CONFIG_CASES: list[tuple[dict[str, Any], str]] = [
    ({"name": ""}, "name"),
    ({"name": "has space"}, "name"),
    ({"name": "n" * 65}, "name"),
    ({"name": 5}, "name"),
    ({"url": "http://127.0.0.1:1/0"}, "url"),
    ({"url": "127.0.0.1:6379"}, "url"),
    ({"url": 5}, "url"),
    ({"partitions": 0}, "partitions"),
    ({"partitions": 5000}, "partitions"),
    ({"partitions": "2"}, "partitions"),
    ({"serializer": "pickle"}, "serializer"),
    ({"ttr": 0}, "ttr"),
    ({"ttr": float("nan")}, "ttr"),
    ({"max_attempts": 0}, "max_attempts"),
    ({"backoff": []}, "backoff"),
    ({"backoff": "x"}, "backoff"),
    ({"handler_timeout": 0}, "handler_timeout"),
    ({"handler_timeout": -1}, "handler_timeout"),
    ({"keep_done": -1}, "keep_done"),
    ({"max_body_bytes": 0}, "max_body_bytes"),
    ({"past_tolerance": -1}, "past_tolerance"),
    ({"socket_timeout": 0}, "socket_timeout"),
    ({"retry_for": -1}, "retry_for"),
]


@pytest.mark.parametrize(("options", "field"), CONFIG_CASES, ids=[f for _, f in CONFIG_CASES])
@pytest.mark.parametrize("build", ["Queue", "AsyncQueue", "QueueConfig"])
def test_queue_options_are_checked_at_construction(
    options: dict[str, Any], field: str, build: str
) -> None:
    values = {"name": "q", "url": "redis://127.0.0.1:1/0", **options}
    with pytest.raises(sd.StreamdelayError) as caught:
        if build == "QueueConfig":
            QueueConfig(**values)
        else:
            name, url = values.pop("name"), values.pop("url")
            getattr(sd, build)(name, url=url, **values)
    assert_names(caught.value, field)


def test_unknown_queue_option_is_refused_by_name() -> None:
    with pytest.raises(sd.StreamdelayError) as caught:
        sd.Queue("q", url="redis://127.0.0.1:1/0", max_attempt=3)
    assert "max_attempt" in str(caught.value)


def test_backoff_object_checks_its_fields() -> None:
    for bad in ({"base": -1}, {"cap": float("inf")}, {"base": "1"}):
        with pytest.raises(sd.ValidationError) as caught:
            sd.Backoff(**bad)
        assert_names(caught.value, "backoff")


def test_partitions_from_the_environment_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMDELAY_PARTITIONS", "four")
    with pytest.raises(sd.ConfigError) as caught:
        sd.Queue("q", url="redis://127.0.0.1:1/0")
    assert_names(caught.value, "partitions")


def test_worker_needs_a_queue() -> None:
    for bad in (object(), "redis://127.0.0.1:1/0", None):
        with pytest.raises(sd.ConfigError) as caught:
            sd.Worker(bad)
        assert_names(caught.value, "queue")


@pytest.mark.parametrize("text", ["", "abc", "5x", "-5s", "1.5.2s", "5 m s", "1e3s", "9" * 400])
def test_parse_duration_refuses_bad_text(text: str) -> None:
    with pytest.raises(sd.ValidationError) as caught:
        parse_duration(text)
    assert_names(caught.value, "duration")
    with pytest.raises(sd.ValidationError) as named:
        parse_duration(text, field="--delay")
    assert_names(named.value, "--delay")


@pytest.mark.parametrize("value", [5, None, 2.5, b"5s"])
def test_parse_duration_refuses_non_text(value: Any) -> None:
    with pytest.raises(sd.ValidationError) as caught:
        parse_duration(value)
    assert_names(caught.value, "duration")


@pytest.mark.parametrize(("text", "seconds"), [
    ("250ms", 0.25), ("30s", 30), ("5m", 300), ("2h", 7200), ("1d", 86400), ("1.5", 1.5),
    (" 10 s ", 10),
])
def test_parse_duration_reads_every_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_the_topic_check_remembers_only_valid_topics_and_a_bounded_number() -> None:
    """``validation.topic`` skips the pattern for a topic it passed before (every job of an
    ``enqueue_many``): what it refuses stays refused, and it keeps at most ``_TOPICS_KEPT``."""
    from streamdelay.base import validation

    class Odd(str):
        """A str subclass: checked every time, never remembered."""

    for _ in range(2):
        assert validation.topic("orders.close") == "orders.close"
        for bad in ("", "a b", "x" * 129, "t\n"):
            with pytest.raises(sd.ValidationError, match="topic"):
                validation.topic(bad)
        assert validation.topic(Odd("odd.one")) == "odd.one"
    assert not any(type(seen) is not str for seen in validation._TOPICS_SEEN)
    for i in range(validation._TOPICS_KEPT + 10):
        validation.topic(f"many.{i}")
    assert len(validation._TOPICS_SEEN) == validation._TOPICS_KEPT
    assert validation.topic(f"many.{validation._TOPICS_KEPT + 5}")  # not kept, still valid
