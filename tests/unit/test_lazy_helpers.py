"""The hot scripts of a plain job build the helpers of job options and workflows only when a
partition uses them (docs/keys.md#includes): Redis runs a whole script on every call, and each
closure an include defines at the top costs every call (docs/benchmarks.md, History). Checked on
the assembled sources: each helper is defined once, inside its lazy builder, never before it."""

from __future__ import annotations

import pytest

from streamdelay.protocol.scripts import load_scripts

LAZY = [
    ("promoteDueV2", "staging_lib", ["staged_topic", "stage", "flush_tally", "wake_takers"]),
    ("promoteDueV2", "ends_lib", ["expire_job", "deadlines_of", "end_dead", "flow_ended",
                                  "keep_result"]),
    ("ackJobsV3", "flow_lib", ["flow_ended", "flow_apply"]),
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
    for name in ("ackJobsV3",):
        source = load_scripts()[name].source
        assert source.find("\nlocal function flow_keep()") < source.find(
            "\nlocal function flow_lib()"), name
