"""The totals' pure parts (docs/dashboard.md#totals): INFO replies in every shape a client
answers, the chart's axis of a longer window, and the windows offered."""

from __future__ import annotations

from streamdelay.telemetry.history import WINDOWS, Counts, info_fields
from streamdelay.web.dashboard.chart import throughput_panel
from streamdelay.web.dashboard.totals import window_of


def test_info_fields_read_text_a_parsed_dict_and_a_cluster_reply_per_node() -> None:
    text = b"# Server\r\nredis_version:7.2.4\r\nused_memory_human:1.50M\r\n"
    assert info_fields(text)["redis_version"] == "7.2.4"
    assert info_fields({"redis_version": "7.2.4"}) == {"redis_version": "7.2.4"}
    per_node = {"127.0.0.1:7000": {"redis_version": "7.4.0"}, "127.0.0.1:7001": {}}
    assert info_fields(per_node) == {"redis_version": "7.4.0"}


def test_processed_counts_every_settled_delivery_and_failed_the_failures() -> None:
    counts = Counts(ok=5, retried=2, dead=1)
    assert (counts.processed, counts.failed) == (8, 3)


def test_a_week_long_chart_labels_hours_per_point_and_days_ago() -> None:
    points, step = WINDOWS["7d"]
    svg = throughput_panel({"ok": [1] * points, "retried": [0] * points, "dead": [0] * points},
                           step=step)
    assert "/h</text>" in svg and "-7 d</text>" in svg and "now</text>" in svg
    assert 'data-ok="168"' in svg
    assert points * step == 7 * 1440


def test_an_unknown_window_is_the_default() -> None:
    assert window_of("7d") == "7d"
    assert window_of("1y") == window_of(None) == "15m"
