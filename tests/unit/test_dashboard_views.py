"""The dashboard's view models, chart, actions and templates: pure, no server, no browser
(docs/dashboard.md)."""

from __future__ import annotations

import re

import pytest

import streamdelay as sd
from streamdelay.base.models import JobInfo, QueueStats, TopicStats
from streamdelay.client.listing import JobPage
from streamdelay.telemetry.lateness import OVERFLOW, bucket_of, parse_lateness
from streamdelay.web.dashboard import view_models as views
from streamdelay.web.dashboard.actions import ACTIONS, confirm_text
from streamdelay.web.dashboard.chart import lateness_chart
from streamdelay.web.dashboard.render import render

NOW = 1_800_000_000_000


def _info(**changes: object) -> JobInfo:
    base: dict[str, object] = dict(
        id="close-42", topic="order.close", state="delayed", due=NOW + 30_000,
        created=NOW - 5000, attempts=1, max_attempts=5, ttr=60.0, body={"order_id": 42},
        headers={"traceparent": "00-abc"}, ttr_ms=60_000)
    base.update(changes)
    return JobInfo(**base)  # type: ignore[arg-type]


def test_durations_and_times_read_well() -> None:
    assert views.duration(None) == views.UNKNOWN
    assert views.duration(0.42) == "0.4 ms" and views.duration(12.4) == "12 ms"
    assert views.duration(2500) == "2.5 s" and views.duration(42_000) == "42 s"
    assert views.duration(200_000) == "3 m 20 s" and views.duration(7_500_000) == "2 h 5 m"
    assert views.duration(3 * 86_400_000) == "3 d"
    assert views.moment(0) == "1970-01-01 00:00:00.000 UTC"
    assert views.relative(NOW + 30_000, NOW) == "in 30 s"
    assert views.relative(NOW - 120_000, NOW) == "2 m ago" and views.relative(NOW, NOW) == "now"


def test_topic_rows_join_counts_and_lateness() -> None:
    stats = QueueStats("q", NOW, {
        "mail": TopicStats("mail", 3, 1, 2, 1, 1500, "workers", paused=True),
        "idle": TopicStats("idle", 0, 0, 0, 0, 0, None)})
    flat = [f"{bucket_of(4)}:mail".encode(), b"99", f"{OVERFLOW}:mail".encode(), b"1",
            f"{bucket_of(1)}:gone".encode(), b"2"]
    window = parse_lateness([NOW, 10, [], 11, flat])
    rows = views.topic_rows(stats, window, minutes=15)
    assert [r.topic for r in rows] == ["gone", "idle", "mail"]
    mail = rows[2]
    assert (mail.delayed, mail.ready, mail.reserved, mail.dead, mail.paused) == (3, 1, 2, 1, True)
    assert mail.lag == "1.5 s" and mail.started == 100 and mail.group == "workers"
    assert mail.p50 == "4.0 ms" and mail.p99 == "5.0 ms"
    assert rows[1].p50 == views.UNKNOWN and rows[1].lag == "0" and "<polyline" not in rows[1].chart
    assert rows[0].delayed == 0 and rows[0].started == 2  # lateness of a topic stats lost
    total = views.totals(rows)
    assert (total.delayed, total.dead, total.paused, total.lag) == (3, 1, 1, "1.5 s")
    no_window = views.topic_rows(stats, None)
    assert [r.p99 for r in no_window] == [views.UNKNOWN, views.UNKNOWN]


def test_a_staged_topic_shows_one_lateness_row_per_priority_under_it() -> None:
    stats = QueueStats("q", NOW, {"report": TopicStats("report", 0, 0, 0, 0, 0, "g"),
                                  "mail": TopicStats("mail", 0, 0, 0, 0, 0, "g")})
    flat = [f"{bucket_of(4)}:report".encode(), b"3", f"{bucket_of(4)}:report#p9".encode(), b"1",
            f"{bucket_of(900)}:report".encode(), b"2",
            f"{bucket_of(900)}:report#p2".encode(), b"2", f"{bucket_of(4)}:mail".encode(), b"5"]
    rows = views.topic_rows(stats, parse_lateness([NOW, 9, [b"3:report#p5", b"4"], 10, flat]),
                            minutes=1)
    mail, report = rows
    assert mail.priorities == ()  # a plain topic: no priority rows
    assert [(p.priority, p.started) for p in report.priorities] == [("9", 1), ("2", 2)]
    assert report.priorities[0].p50 == "4.0 ms" and report.priorities[1].p99 == "995 ms"
    assert report.started == 5  # the topic's row counts each start once
    html = render("_topics.html", queue="q", rows=rows, total=views.totals(rows), now="t",
                  minutes=1, can=set())
    assert re.findall(r'data-priority-of="(\w+)" data-priority="(\d)"', html) == [
        ("report", "9"), ("report", "2")]


def test_topic_rows_show_key_limits_and_the_top_keys_of_a_staged_topic() -> None:
    stats = QueueStats("q", NOW, {"report": TopicStats(
        "report", 0, 9, 1, 0, 0, "workers", concurrency=4, leases=1, staged=True,
        keys=(("acme", 7), ("", 2)), key_rate="10/m", key_concurrency=2)})
    [row] = views.topic_rows(stats, None)
    assert row.limit == "1/4 running, each key 10/m, 2 at once"
    assert row.keys == "acme 7, (no key) 2"


def test_chart_draws_p50_and_p99_with_gaps_on_a_log_axis() -> None:
    svg = lateness_chart([1.0, None, 10.0, 20.0], [5.0, None, 100.0, 60_000.0], title="a<b")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<title>a&lt;b</title>" in svg
    assert svg.count('<circle class="p50"') == 1 and svg.count('<polyline class="p50"') == 1
    ys = [float(y) for y in re.findall(r'polyline class="p99" points="[^"]*?,([\d.]+)"', svg)]
    assert ys == [0.0]  # a minute at the top bucket touches the top
    assert "<polyline" not in lateness_chart([None], [None])


def test_job_view_shows_record_and_actions_by_state() -> None:
    view = views.job_view(_info(), NOW)
    fields = dict(view.fields)
    assert fields["due"].endswith("(in 30 s)") and fields["attempts"] == "1 failed of at most 5"
    assert fields["ttr"] == "1 m" and "consumer" not in fields
    assert view.actions == ("run_now", "reschedule", "cancel")
    assert '"order_id": 42' in view.body and view.headers == [("traceparent", "00-abc")]
    reserved = views.job_view(_info(state="reserved", consumer="host-1", idle_ms=900,
                                    deliveries=2), NOW)
    assert dict(reserved.fields)["consumer"] == "host-1" and reserved.actions == ("cancel",)
    dead = views.job_view(_info(state="dead", error="ValueError: boom"), NOW)
    assert dead.actions == ("replay", "purge") and dead.error == "ValueError: boom"
    waiting = views.job_view(_info(state="waiting", due=0,
                                   parents={"a": "succeeded", "b": "pending"}), NOW)
    shown = dict(waiting.fields)
    assert shown["parents"] == "a (succeeded), b (pending)" and waiting.actions == ("cancel",)
    assert shown["due"] == "when its parents have ended"


def test_job_view_shows_priority_key_and_expiry_of_a_job_with_options() -> None:
    plain = dict(views.job_view(_info(), NOW).fields)
    assert not {"priority", "key", "expires"} & set(plain)
    fields = dict(views.job_view(_info(id="{acme}close-42", priority=8, key="acme",
                                       expires_at=NOW + 90_000), NOW).fields)
    assert (fields["priority"], fields["key"]) == ("8", "acme")
    assert fields["expires"].endswith("(in 1 m 30 s)")
    expiring = dict(views.job_view(_info(expires_at=NOW + 60_000), NOW).fields)
    assert "expires" in expiring and "priority" not in expiring


def test_bodies_are_shown_as_text_and_cut() -> None:
    assert views.body_text(b"plain") == "plain"
    assert views.body_text(b"\xff\x00") == "ff 00"
    cut = views.body_text("x" * 50, limit=10)
    assert cut == '"' + "x" * 9 + "\n… (42 more characters not shown)"


def test_page_view_keeps_order_and_cursor() -> None:
    page = JobPage([_info(id="a"), _info(id="b", state="dead", error="e" * 1000)], "d:1:b")
    view = views.page_view(page, NOW)
    assert [r.id for r in view.rows] == ["a", "b"] and view.next_cursor == "d:1:b"
    assert view.rows[0].due_in == "in 30 s" and len(view.rows[1].error) == views.ERROR_CHARS


def test_every_action_says_what_it_does_and_needs() -> None:
    assert "close-42" in confirm_text("cancel", "q", "close-42", None)
    assert "mail" in confirm_text("pause", "q", None, "mail")
    assert "every dead job of topic mail" in confirm_text("purge", "q", None, "mail")
    with pytest.raises(sd.ValidationError) as needs:
        confirm_text("cancel", "q", None, "mail")
    assert needs.value.field == "id"
    with pytest.raises(sd.ValidationError) as unknown:
        confirm_text("drop-table", "q", "x", None)
    assert unknown.value.field == "action"
    for act in ACTIONS.values():
        assert (act.on_job or act.on_topic or act.on_worker) and act.scope in ("write", "admin")


def test_pages_render_escaped_with_their_csrf_field() -> None:
    stats = QueueStats("q", NOW, {"<b>": TopicStats("<b>", 1, 0, 0, 0, 0, None)})
    rows = views.topic_rows(stats, None)
    html = render("queue.html", queues=["q"], queue="q", rows=rows, total=views.totals(rows),
                  now="t", user="ops", csrf_token="tok<en>")
    assert "&lt;b&gt;" in html and "<b>" not in html.split("<body>")[1].replace("<body>", "")
    assert 'name="_csrf_token" value="tok&lt;en&gt;"' in html  # the log-out form
    assert 'data-live="/q/q/fragment/topics?detail=1"' in html and "action=pause" not in html
    assert "action=pause" in render("queue.html", queues=["q"], queue="q", rows=rows,
                                    total=views.totals(rows), now="t", can={"pause"})
    confirm = render("confirm.html", queues=["q"], queue="q", act=ACTIONS["cancel"],
                     sentence="s", job_id="j1", topic="t", back="/q/q", csrf_token="abc")
    assert 'method="post" action="/q/q/act"' in confirm and 'value="abc"' in confirm
    job = render("job.html", queues=["q"], queue="q", job_id="j1", labels={},
                 job=views.job_view(_info(state="done"), NOW))
    assert "confirm?action" not in job and 'data-live="/q/q/fragment/job?id=j1"' in job


def test_only_paths_of_this_site_are_followed_after_login_or_an_action() -> None:
    from streamdelay.web.dashboard.pages import local_path

    assert local_path("/q/orders/job?id=a") == "/q/orders/job?id=a"
    for outside in ("https://evil.example/", "//evil.example/x", "/\\evil.example", "", None,
                    "javascript:alert(1)"):
        assert local_path(outside, "/home") == "/home"


def test_limits_and_schedules_read_well() -> None:
    stats = QueueStats("q", NOW, {
        "api": TopicStats("api", 0, 4, 2, 0, 0, "workers", rate="20/s", concurrency=3,
                          leases=2),
        "mail": TopicStats("mail", 0, 0, 0, 0, 0, None)})
    rows = views.topic_rows(stats, None)
    assert [r.limit for r in rows] == ["20/s, 2/3 running", ""]
    assert views.limit_text(None, 5, 0) == "0/5 running" and views.limit_text("1/h", None, 0) \
        == "1/h"
    nightly = sd.Schedule("nightly", "report", "0 3 * * *", None, "Europe/Paris", 60, 3,
                          "skip", 0, False, NOW + 90_000, 0, None)
    beat = sd.Schedule("beat", "ping", None, 30.0, "UTC", 60, 3, "skip", 0, True, NOW + 5, 0,
                       None)
    listed = views.schedule_rows([nightly, beat], NOW)
    assert [(r.name, r.when, r.paused) for r in listed] == [
        ("beat", "every 30 s", True), ("nightly", "cron 0 3 * * * (Europe/Paris)", False)]
    assert listed[0].next == views.UNKNOWN and listed[1].next.endswith("(in 1 m 30 s)")


def test_operator_items_warning_reclaim_totals_and_throughput() -> None:
    assert views.warning_of(3, None).startswith("3 ready jobs and no consumer group")
    assert views.warning_of(0, None) == "" and views.warning_of(5, "workers") == ""
    assert views.reclaim_text(30_000, 5_000).startswith("in 25 s unless touched")
    assert views.reclaim_text(30_000, 45_000).startswith("due now: idle 45 s past its ttr")
    stats = QueueStats("q", NOW, {"a": TopicStats("a", 100, 2, 1, 7, 0, "g"),
                                  "b": TopicStats("b", 61, 0, 0, 0, 0, None)})
    assert views.total_of(stats, "delayed", None) == 161
    assert views.total_of(stats, "dead", "a") == 7
    reserved = views.job_view(_info(state="reserved", consumer="w1", idle_ms=10_000,
                                    deliveries=1), NOW, "g")
    assert ("group", "g") in reserved.fields and dict(reserved.fields)["reclaimed"].startswith(
        "in 50 s")
    reply = [NOW, NOW // 60000, [b"ok:a", b"4", b"dead:a", b"1", b"3:a", b"5", b"x:a", b"9"]]
    window = parse_lateness(reply)
    assert window.throughput("a") == {"started": [5], "ok": [4], "retried": [0], "dead": [1]}
    rows = views.topic_rows(stats, window, detail=True)
    panel = rows[0].throughput_panel
    assert 'data-ok="4"' in panel and 'data-dead="1"' in panel and 'data-started="5"' in panel
    assert "10 ms" in rows[0].lateness_panel and rows[0].settled == 5
    assert views.topic_rows(stats, window)[0].throughput_panel == ""  # the overview: no panels
