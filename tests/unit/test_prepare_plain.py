"""``prepare_values`` packs a plain job (the queue's defaults) on a short path of its own: the
same values as the general path, which the same job takes when a default is given explicitly."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.client.enqueuing import PreparedJob, prepare_values
from streamdelay.io.config import QueueConfig

URL = "redis://127.0.0.1:1/0"
CONFIGS = [QueueConfig("q", URL), QueueConfig("q", URL, keep_result=60, partitions=4),
           QueueConfig("q", URL, serializer="msgpack", ttr=7.5, max_attempts=2)]


def prepare(cfg: QueueConfig, body: Any, **fields: Any) -> PreparedJob:
    values = {"delay": None, "at": None, "id": "j1", "ttr": None, "max_attempts": None,
              "backoff": None, "headers": None, "replace": False, "max_wait": None, **fields}
    return prepare_values(cfg, "t.x", body, **values)


@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("when", [{}, {"delay": 2.5}, {"at": 1.9e9},
                                  {"delay": timedelta(minutes=5)}])
@pytest.mark.parametrize("body", [{"a": [1, 2]}, b"raw", None, "x" * 5000])
def test_a_plain_job_gets_the_general_paths_values(cfg: QueueConfig, when: dict[str, Any],
                                                   body: Any) -> None:
    plain = prepare(cfg, body, **when)
    general = prepare(cfg, body, ttr=cfg.ttr, **when)  # an explicit default: the general path
    assert plain == general
    assert prepare(cfg, body, max_attempts=cfg.max_attempts, **when) == plain


@pytest.mark.parametrize("fields", [
    {"ttr": 0}, {"max_attempts": 0}, {"replace": 1}, {"keep_result": -1}, {"keep_done": -1},
    {"headers": {"a": 1}}, {"backoff": "x"}, {"max_wait": 5}, {"delay": -1},
])
def test_a_bad_field_beside_a_plain_body_is_still_named(fields: dict[str, Any]) -> None:
    field = next(iter(fields))
    with pytest.raises(sd.ValidationError) as refused:
        prepare(CONFIGS[0], {"a": 1}, **fields)
    assert refused.value.field == field


def test_a_bad_body_of_a_plain_job_is_named() -> None:
    with pytest.raises(sd.ValidationError) as refused:
        prepare(CONFIGS[0], {"a": float("nan")})
    assert refused.value.field == "body"
