"""A quiet command as the worker's views and fleet entry hold it, and the command field read
back (docs/operations.md#quiet-and-stop). No server."""

from __future__ import annotations

import json

from streamdelay.consume.fleet_self import FleetSelf
from streamdelay.consume.topic_views import TopicViews
from streamdelay.protocol.fleet_records import parse_command


def test_quiet_holds_every_topic_paused_whatever_the_pause_watch_reads() -> None:
    views = TopicViews()
    views.set_paused(frozenset({"a"}))
    assert views.plain(["a", "b", "c"]) == ["b", "c"]
    assert views.set_quiet(frozenset({"b", "c"})) is True
    assert views.set_quiet(frozenset({"b", "c"})) is False  # once
    assert views.plain(["a", "b", "c"]) == [] and views.changed.is_set()
    views.set_paused(frozenset())  # a resume of "a" later: the quiet topics stay held
    assert views.paused == frozenset({"b", "c"}) and views.plain(["a", "b", "c"]) == ["a"]


def test_the_fleet_entry_says_quiet_and_stopping_wins() -> None:
    me = FleetSelf("g", 2)
    state = [json.loads(me.blob(["t"], [], stopping, quiet))["state"]
             for stopping, quiet in ((False, False), (False, True), (True, True))]
    assert state == ["running", "quiet", "stopping"]


def test_a_command_counts_for_the_process_it_names_only() -> None:
    assert parse_command(b"quiet|1700|1800", 1700) == "quiet"
    assert parse_command("stop|1700|1800", 1700) == "stop"
    assert parse_command(b"stop|1699|1800", 1700) is None  # an earlier process of that name
    assert parse_command(None, 1700) is None
    assert parse_command(b"drop|1700|1800", 1700) is None  # a foreign write
