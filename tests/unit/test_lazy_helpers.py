"""The hot scripts of a plain job build the helpers of job options and workflows only when a
partition uses them (docs/keys.md#includes): Redis runs a whole script on every call, and each
closure an include defines at the top costs every call (docs/benchmarks.md, History). Checked on
the assembled sources: each helper is defined once, inside its lazy builder, never before it."""

from __future__ import annotations

import pytest

from streamdelay.protocol.scripts import load_scripts

LAZY = [
    ("promoteDue", "staging_lib", ["staged_topic", "stage", "flush_tally", "wake_takers"]),
    ("promoteDue", "ends_lib", ["expire_job", "deadlines_of", "end_dead", "flow_ended",
                                  "keep_result"]),
    ("ackJobs", "ends_lib", ["flow_ended", "flow_apply", "parse_record", "build_record",
                             "full_record", "keep_result", "release_hold", "started_at"]),
    ("failJob", "dead_lib", ["end_dead", "flow_ended", "flow_apply", "dead_result"]),
    ("enqueueJobs", "lib", ["detach", "unstage", "hold_of", "check_hold_keys", "build_record",
                            "purge_done", "read_records", "opts_arg", "drop_opts"]),
]


@pytest.mark.parametrize(("name", "builder", "helpers"), LAZY)
def test_feature_helpers_are_built_inside_their_lazy_builder(name: str, builder: str,
                                                             helpers: list[str]) -> None:
    source = load_scripts()[name].source
    start = source.find(f"\nlocal function {builder}()\n")
    assert start > 0, f"{name} has no {builder}()"
    for helper in helpers:
        definition = f"\nlocal function {helper}("
        assert source.count(definition) == 1, f"{name}: {helper} defined once"
        assert source.find(definition) > start, f"{name}: {helper} built before {builder}()"


def test_the_settle_scripts_ask_flow_keep_without_building_the_workflow_helpers() -> None:
    for name in ("ackJobs",):
        source = load_scripts()[name].source
        assert source.find("\nlocal function flow_keep()") < source.find(
            "\nlocal function ends_lib()"), name


EVENTS = [
    ("events_lib", ["local function emit(", "local function flush(", "local EV_I, EV_D",
                    "local EVENTS_N, EVENTS_BYTES"]),
    ("started_lib", ["local function started_before(", "local function prefetch(",
                     "local function started(", "local EVENTS_STARTED = {}"]),
]


@pytest.mark.parametrize("name", ["promoteDue", "ackJobs", "failJob", "touchJobs"])
def test_the_events_writer_is_built_only_by_its_lazy_builder(name: str) -> None:
    """A script with events off builds none of the events' tables and closures
    (includes/emit_event.lua, includes/emit_started.lua): each is inside its builder."""
    source = load_scripts()[name].source
    for builder, parts in EVENTS:
        start = source.find(f"\nlocal function {builder}()\n")
        if builder == "events_lib":
            assert start > 0, f"{name} has no {builder}()"
        elif start < 0:
            continue  # a script without 'started' events
        for part in parts:
            assert source.count(part) == 1, f"{name}: {part} once"
            assert source.find(part) > start, f"{name}: {part} before {builder}()"
