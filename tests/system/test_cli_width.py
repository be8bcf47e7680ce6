"""The CLI in an 80-column terminal, with a queue that looks like production: every table
command's output fits 80 columns, headers sit over their column's alignment, the lag reads
"43 s" (raw ms in --json); ``--url`` before the command; an unreachable Redis without a "see
--help"; enqueue's answer does not reuse ``get``'s word ``created`` (docs/cli.md#common-rules).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator

import click
import pytest

import streamdelay as sd
from streamdelay.cli.commands import cli as cli_group
from streamdelay.cli.output import lag_text
from streamdelay.protocol.keys import partition_keys
from tests.support.promoting import promote_due
from tests.support.redis_server import RedisServer
from tests.system.test_cli import assert_one_line_error, cli, cli_many, field

WIDTH = 80
CARD_DECLINED = ("stripe.error.CardError: Your card was declined. Request req_8f3a2b1c9d7e "
                 "(decline_code: insufficient_funds)\nTraceback (most recent call last): ...")


@pytest.fixture(scope="module")
def production(shared_redis: RedisServer) -> Iterator[tuple[str, str]]:
    """(Redis URL, queue name) of a queue with the names and states of a real one: long
    topics and groups, delayed, ready, reserved and dead jobs, a paused topic, a limit and
    two schedules."""
    name = f"orders-{uuid.uuid4().hex[:6]}"
    url = shared_redis.url
    q = sd.Queue(name, url=url, events=True)  # `events` shows its lifecycle (docs/events.md)
    for n in range(3):
        q.enqueue("order.close", {"order_id": n}, id=f"order-close-2026-11-26-{n:06d}",
                  delay=900 + n)
    q.enqueue("invoice.reminder.send", {}, delay=3600)
    q.enqueue("mail.send", {"to": "ada@example.com"}, id="mail-welcome-ada")
    q.enqueue("payment.capture", {"amount": 4200}, max_attempts=1)
    q.enqueue("payment.capture", {"amount": 99}, id="capture-8f3a2b1c9d7e", max_attempts=1)
    q.enqueue("webhook.deliver", {}, id="webhook-delivery-123456789")
    keys = partition_keys(name, 1)[0]

    async def promote() -> None:
        dispatcher = sd.Dispatcher(q.config)
        await promote_due(dispatcher, keys, expected=4)
        await dispatcher.close()

    asyncio.run(promote())
    for reservation in q.reserve("payment.capture", group="billing-workers",
                                 consumer="billing-7f9c-host-42-31337", count=2, wait=2):
        reservation.fail(CARD_DECLINED)
    assert q.reserve("mail.send", group="mailers", consumer="mailer-host-1-4242-cd34",
                     wait=2)
    q.limit("mail.send", rate="100/s", concurrency=10)
    q.pause("invoice.reminder.send")
    q.schedule("nightly-report-europe", "report.build.daily", {"kind": "daily"},
               cron="30 2 * * *", tz="Europe/Berlin", missed="once")
    q.schedule("heartbeat", "metrics.ping", None, every=15)
    time.sleep(1.1)  # webhook.deliver waits ready with no consumer: a lag of a second or more
    q.close()
    yield url, name


TABLES = [
    ["stats"], ["dead", "list"], ["schedule", "list"], ["jobs", "--state", "delayed"],
    ["jobs", "--state", "ready"], ["jobs", "--state", "reserved"], ["jobs", "--state", "dead"],
]


def _tables() -> list[list[str]]:
    """TABLES, and ``jobs search`` where the CLI has it (it lists several states at once)."""
    jobs = cli_group.commands.get("jobs")
    found = [*TABLES]
    if isinstance(jobs, click.Group) and "search" in jobs.commands:
        found += [["jobs", "search"], ["jobs", "search", "--state", "dead"]]
    return found


def test_every_table_fits_80_columns(production: tuple[str, str]) -> None:
    url, name = production
    runs = [[*args[:2], name, *args[2:]] if args[0] in ("dead", "schedule") or args[1:2] == [
        "search"] else [args[0], name, *args[1:]] for args in _tables()]
    for args, done in zip(runs, cli_many(runs, url=url), strict=True):
        assert done.returncode == 0, (args, done.stderr)
        lines = done.stdout.splitlines()
        assert len(lines) >= 2 and lines[0].isupper(), (args, done.stdout)  # a header, rows
        widest = max(len(line) for line in lines)
        assert widest <= WIDTH, f"{' '.join(args)} is {widest} wide:\n{done.stdout}"


PRODUCTION_IDS = ["order-close-2026-11-26-000000", "mail-welcome-ada", "capture-8f3a2b1c9d7e",
                  "webhook-delivery-123456789"]


def assert_fits(done: subprocess.CompletedProcess[str]) -> list[str]:
    """Exit 0 and every line of stdout within 80 columns; the lines."""
    assert done.returncode == 0, (done.args, done.stderr)
    lines = done.stdout.splitlines()
    widest = max((len(line) for line in lines), default=0)
    assert widest <= WIDTH, f"{' '.join(done.args[-3:])} is {widest} wide:\n{done.stdout}"
    return lines


def test_every_line_of_get_events_and_search_fits_80_columns(
        production: tuple[str, str]) -> None:
    """Not only the tables: ``get`` of each kind of job (a dead one with a multi-line error),
    ``events`` (a dead event whose detail is a traceback), ``jobs search --error``."""
    url, name = production
    runs = [["get", name, job_id] for job_id in PRODUCTION_IDS] + [
        ["events", name], ["events", name, "--json"],
        ["jobs", "search", name, "--error", "card"]]
    *gets, events, raw, search = cli_many(runs, url=url)
    for done in gets:
        assert_fits(done)
    dead = gets[PRODUCTION_IDS.index("capture-8f3a2b1c9d7e")].stdout
    assert field(dead, "error").startswith("stripe.error.CardError: Your card was declined.")
    assert field(dead, "error").endswith("...") and "Traceback" not in dead  # all in --json

    lines = assert_fits(events)
    kept = [json.loads(line) for line in raw.stdout.splitlines()]
    assert {"enqueued", "promoted", "started", "dead"} <= {e["kind"] for e in kept}
    # one line per event starts with its time; what wraps is indented under it
    starts = [line for line in lines if re.match(r"\d{4}-\d\d-\d\dT", line)]
    assert len(starts) == len(kept)
    assert all(line.startswith("  ") for line in lines if line not in starts)
    assert "Traceback" not in events.stdout  # the first line of a detail, the rest in --json
    at = next(i for i, line in enumerate(lines) if " dead " in line
              and "capture-8f3a2b1c9d7e" in " ".join(lines[i:i + 2]))
    detail = next(line for line in lines[at:at + 3] if "CardError" in line)
    assert detail.endswith("...")

    lines = assert_fits(search)
    assert lines[-1] == "2 found, 8 examined; complete", search.stdout  # nothing more to scan
    assert not any(line.rstrip().endswith(":") for line in lines)


def test_claim_wraps_its_lists_of_ids_within_80_columns(redis_url: str) -> None:
    """``claim`` names every job it moved: a long list wraps onto indented lines (nothing is
    cut: the ids are to be copied)."""
    name = f"q{uuid.uuid4().hex[:8]}"
    ids = [f"order-close-2026-11-26-{n:06d}" for n in range(6)]
    with sd.Queue(name, url=redis_url) as q:
        q.enqueue_many([sd.JobSpec("order.close", {"n": n}, id=job_id)
                        for n, job_id in enumerate(ids)])

        async def promote() -> None:
            dispatcher = sd.Dispatcher(q.config)
            await promote_due(dispatcher, partition_keys(name, 1)[0], expected=len(ids))
            await dispatcher.close()

        asyncio.run(promote())
        assert len(q.reserve("order.close", group="billing", consumer="billing-host-1-4242",
                             count=len(ids), wait=2)) == len(ids)
    done = cli("claim", name, "--group", "billing", "--min-idle", "0", url=redis_url)
    lines = assert_fits(done)
    assert lines[0].startswith("6 job(s) re-queued")
    # each message starts a line; what wraps is indented under it
    starts = [line for line in lines if not line.startswith("  ")]
    assert [line.split()[1] for line in starts] in (["job(s)"], ["job(s)", "1"]), lines
    assert all(job_id in done.stdout.split() or f"{job_id}," in done.stdout.split()
               for job_id in ids)


def test_a_waiting_job_shows_no_due_time(redis_url: str) -> None:
    """A job waiting for its parents has no due time yet (docs/workflows.md): ``enqueue`` and
    ``get`` say so, as ``jobs`` does, rather than show epoch 0 as 1970."""
    name = f"q{uuid.uuid4().hex[:8]}"
    parent, = cli_many([["enqueue", name, "t", "{}", "--id", "parent", "--delay", "1h"]],
                       url=redis_url)
    assert parent.returncode == 0, parent.stderr
    child = cli("enqueue", name, "t", "{}", "--id", "child", "--after", "parent", url=redis_url)
    shown, listed = cli_many([["get", name, "child"], ["jobs", name, "--state", "waiting"]],
                             url=redis_url)
    assert field(child.stdout, "state") == "waiting"
    for text in (child.stdout, shown.stdout):
        assert field(text, "due") == "after its parents (no due time yet)", text
        assert "1970" not in text
    assert "after parents" in listed.stdout
    assert json.loads(cli("get", name, "child", "--json", url=redis_url).stdout)["due"] == 0


@pytest.mark.parametrize("args", [
    ["enqueue", "Q", "t", "{}", "--delay", "-5s"], ["enqueue", "Q", "t", "{}", "--ttr", "-1"],
    ["reschedule", "Q", "some-id", "--delay", "-250ms"]])
def test_a_negative_duration_is_refused_as_negative(args: list[str], redis_url: str) -> None:
    done = cli(*[f"q{uuid.uuid4().hex[:8]}" if a == "Q" else a for a in args], url=redis_url)
    assert_one_line_error(done, 2)
    assert "must not be negative" in done.stderr and "is not a duration" not in done.stderr


def test_stats_shows_lag_in_seconds_and_pauses_and_limits_under_the_table(
        production: tuple[str, str]) -> None:
    url, name = production
    text, raw = cli_many([["stats", name], ["stats", name, "--json"]], url=url)
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["TOPIC", "GROUP", "DELAYED", "READY", "RESERVED", "DEAD", "LAG"]
    webhook = next(line for line in lines if line.startswith("webhook.deliver"))
    assert re.search(r"\s\d+(\.\d)? s$", webhook), webhook
    assert "paused: invoice.reminder.send" in lines
    assert "limit: mail.send 100/s, 0/10 running" in lines
    doc = json.loads(raw.stdout)
    assert doc["topics"]["webhook.deliver"]["lag_ms"] >= 1000  # the raw figure stays in JSON
    # numbers right-aligned under right-aligned headers
    header = lines[0]
    for line in lines[1:len(doc["topics"]) + 2]:
        assert line[header.index("DEAD") + 3] != " ", line


def test_dead_list_aligns_headers_and_puts_the_error_under_its_job(
        production: tuple[str, str]) -> None:
    url, name = production
    lines = cli("dead", "list", name, url=url).stdout.splitlines()
    header = lines[0]
    assert header.split("  ")[0] == "ID" and "TRIES  DEAD AT (UTC)" in header
    row = next(line for line in lines if line.startswith("capture-8f3a2b1c9d7e"))
    assert row[header.index("TRIES") + len("TRIES") - 1] == "1"  # under its header's end
    assert row[header.index("DEAD AT")].isdigit()  # the time starts under its header
    error = lines[lines.index(row) + 1]
    assert error.startswith("  stripe.error.CardError: Your card was declined.")
    assert error.endswith("...") and len(error) <= WIDTH and "Traceback" not in error


def test_url_before_the_command(production: tuple[str, str]) -> None:
    url, name = production
    before, both = cli_many([["--url", url, "stats", name],
                             ["--url", "redis://127.0.0.1:1/0", "stats", name, "--url", url]])
    assert before.returncode == 0 and before.stdout.startswith("TOPIC"), before.stderr
    def without_lag(text: str) -> str:  # the lag grows between the two reads
        # and its width sets the column's: compare the cells, not the padding
        text = re.sub(r"\s+[\d.]+ (s|min|h|d)$", "", text, flags=re.MULTILINE)
        return re.sub(r" +", " ", text)

    assert both.returncode == 0, both.stderr  # the command's own --url wins
    assert without_lag(both.stdout) == without_lag(before.stdout)
    wrong = cli("--url", "redis://127.0.0.1:1/0", "get", name, "x")
    assert_one_line_error(wrong, 1)
    assert wrong.stderr.startswith("streamdelay get: error: cannot reach Redis")


def test_connection_errors_do_not_send_the_user_to_the_help() -> None:
    done = cli("stats", "orders", "--url", "redis://127.0.0.1:1/0")
    assert_one_line_error(done, 1)
    assert "cannot reach Redis at redis://127.0.0.1:1/0" in done.stderr
    assert "--help" not in done.stderr
    usage = cli("stats")
    assert_one_line_error(usage, 2)
    assert "(see 'streamdelay stats --help')" in usage.stderr


def test_enqueue_says_what_happened_without_gets_word_created(redis_url: str) -> None:
    name = f"q{uuid.uuid4().hex[:8]}"
    first, = cli_many([["enqueue", name, "t", "{}", "--id", "one"]], url=redis_url)
    again, replaced = cli_many([["enqueue", name, "t", "{}", "--id", "one"],
                                ["enqueue", name, "u", "{}", "--id", "two", "--replace"]],
                               url=redis_url)
    assert field(first.stdout, "outcome") == "new job"
    assert field(again.stdout, "outcome") == "the id existed: nothing changed"
    assert not re.search(r"^created\s", first.stdout + again.stdout, re.MULTILINE)
    shown = cli("get", name, "one", url=redis_url).stdout
    assert re.match(r"\d{4}-\d\d-\d\dT", field(shown, "created"))  # get: the creation time
    assert field(replaced.stdout, "outcome") == "new job"


@pytest.mark.parametrize(("ms", "shown"), [
    (0, "0 s"), (400, "0.4 s"), (9_949, "9.9 s"), (43_210, "43 s"), (119_000, "119 s"),
    (720_000, "12 min"), (5 * 3600_000, "5 h"), (3 * 86400_000, "3 d")])
def test_lag_for_people(ms: int, shown: str) -> None:
    assert lag_text(ms) == shown


def test_help_says_url_goes_before_or_after() -> None:
    done: subprocess.CompletedProcess[str] = cli("--help")
    assert "before or after the command" in " ".join(done.stdout.split())
