"""Bad input through the command line, tried systematically (issue: fuzzing the CLI too).

Hypothesis draws each argument of ``enqueue``, ``get``, ``cancel``, ``reschedule``, ``claim`` and
``dead list`` either from its documented valid set or from outside it, and the test knows which
(an oracle from the documented rules in docs/cli.md, not from the implementation).
The command runs through ``run_cli``, the very function the ``streamdelay`` console script calls,
against a real redis-server. Every outcome must be an exit code of 0 / 1 / 2 with at most one
line on stderr and never a traceback; a refused command (exit 2) must leave every key of the
queue as it was; an accepted ``enqueue`` must store exactly the job asked for. A last test runs
a handful of nasty argument lists as real subprocesses.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st

import streamdelay as sd
from streamdelay.cli.commands import cli
from streamdelay.cli.exit_codes import run_cli
from tests.support.redis_server import RedisServer
from tests.system.test_cli import cli_many

FUZZ = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ID_CHARS = "abcXYZ019_.:@/+=-"
TOPIC_CHARS = "abcXYZ019_.:-"
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Arg:
    """One drawn command-line value and whether the documented rules accept it."""

    value: str
    ok: bool


def positional(arg: Arg) -> Arg:
    """A positional value starting with ``-`` reads as an option (a usage error, exit 2), except
    a lone ``-``, which click passes on as a value."""
    return Arg(arg.value, arg.ok and (arg.value == "-" or not arg.value.startswith("-")))


ids = st.one_of(
    st.text(ID_CHARS, min_size=1, max_size=128).map(lambda v: Arg(v, True)),
    st.one_of(st.just(""), st.text(min_size=129, max_size=140, alphabet=ID_CHARS),
              st.text(st.characters(blacklist_characters="\x00"), min_size=1, max_size=20)
              .filter(lambda v: re.fullmatch(r"[A-Za-z0-9_.:@/+=-]+", v) is None)
              ).map(lambda v: Arg(v, False)),
)
topics = st.one_of(
    st.text(TOPIC_CHARS, min_size=1, max_size=128).map(lambda v: Arg(v, True)),
    st.one_of(st.just(""), st.text(st.characters(blacklist_characters="\x00"), min_size=1,
                                   max_size=20)
              .filter(lambda v: re.fullmatch(r"[A-Za-z0-9_.:-]+", v) is None)
              ).map(lambda v: Arg(v, False)),
)
# Delays: a number and a unit, at most ~8 years (the documented ceiling is 10 years).
delays = st.one_of(
    st.builds(lambda n, u: Arg(f"{n}{u}", True), st.integers(0, 3000),
              st.sampled_from(list(UNITS))),
    st.one_of(st.sampled_from(["", "-5s", "1.5.5s", "10y", "s", "1e400s", "ms5", "٣s"]),
              st.text(st.characters(blacklist_characters="\x00"), max_size=8)
              .filter(lambda v: re.fullmatch(r"\s*[0-9.]+\s*(ms|s|m|h|d)?\s*", v) is None)
              ).map(lambda v: Arg(v, False)),
)
ttrs = st.one_of(
    st.builds(lambda n: Arg(f"{n}s", True), st.integers(1, 604800)),
    st.sampled_from(["0s", "8d", "-1s", "forever"]).map(lambda v: Arg(v, False)),
)
attempts = st.one_of(
    st.integers(1, 1000).map(lambda n: Arg(str(n), True)),
    st.sampled_from(["0", "1001", "-3", "many", "2.5"]).map(lambda v: Arg(v, False)),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12)
bodies = st.one_of(
    json_values.map(lambda v: Arg(json.dumps(v), True)),
    st.sampled_from(["{bad", "[1,", "'single'", "NaN-ish", "{\"a\": }", ""]).map(
        lambda v: Arg(v, False)),
)
headers = st.one_of(
    st.builds(lambda k, v: Arg(f"{k}={v}", True), st.text("abcxyz-_", min_size=1, max_size=10),
              st.text("abc 123=", max_size=10)),
    st.sampled_from(["nokey", "=value", ""]).map(lambda v: Arg(v, False)),
)


def snapshot(client: redis.Redis, queue: str) -> dict[bytes, bytes | None]:
    """Every key of the queue with its DUMP, to prove a refused command changed nothing."""
    return {k: client.dump(k) for k in client.scan_iter(match=f"sd:{{{queue}#*", count=1000)}


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[RedisServer]:
    """A private server for this module's many commands."""
    with RedisServer() as server:
        yield server


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    """One command through the console script's own entry function."""
    capsys.readouterr()
    code = run_cli(cli, argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_clean(code: int, out: str, err: str) -> None:
    """Exit 0/1/2, one line at most on stderr, no traceback, no internal error."""
    assert code in (0, 1, 2), (code, out, err)
    assert len(err.strip().splitlines()) <= 1, err
    assert "Traceback" not in out + err and "internal error" not in err, err


@FUZZ
@given(topic=topics, body=bodies, job_id=st.none() | ids, delay=st.none() | delays,
       ttr=st.none() | ttrs, max_attempts=st.none() | attempts,
       header_list=st.lists(headers, max_size=3))
def test_enqueue_refuses_bad_values_and_stores_good_ones(
    fuzz_server: RedisServer, capsys: pytest.CaptureFixture[str], topic: Arg, body: Arg,
    job_id: Arg | None, delay: Arg | None, ttr: Arg | None, max_attempts: Arg | None,
    header_list: list[Arg],
) -> None:
    queue = f"cf{uuid.uuid4().hex[:8]}"
    client = fuzz_server.client()
    argv = ["enqueue", queue, "--url", fuzz_server.url]
    drawn = [positional(topic), positional(body)]
    argv += [topic.value, body.value]
    for flag, arg in (("--id", job_id), ("--delay", delay), ("--ttr", ttr),
                      ("--max-attempts", max_attempts)):
        if arg is not None:
            argv += [f"{flag}={arg.value}"]
            drawn.append(arg)
    for header in header_list:
        argv += [f"--header={header.value}"]
        drawn.append(header)
    argv.append("--json")
    before = snapshot(client, queue)
    code, out, err = run(capsys, argv)
    assert_clean(code, out, err)
    if all(arg.ok for arg in drawn):
        assert code == 0, (argv, err)
        result = json.loads(out)
        info = sd.Queue(queue, url=fuzz_server.url).get(result["id"])
        assert info is not None and info.topic == topic.value
        assert info.body == json.loads(body.value)
        if job_id is not None:
            assert result["id"] == job_id.value
        if header_list:
            expected = dict(h.value.split("=", 1) for h in header_list)
            assert info.headers == expected
    else:
        assert code == 2, (argv, out, err)
        assert err.startswith("streamdelay"), err
        assert snapshot(client, queue) == before


PRESENT = "present"  # the id of the one job each by-id example enqueues
ids_or_present = st.one_of(st.just(Arg(PRESENT, True)), ids)


def test_the_by_id_fuzz_can_draw_the_present_id() -> None:
    """The success paths of get/cancel/reschedule are fuzzed only if the id can be drawn."""
    assert find(ids_or_present, lambda arg: arg.value == PRESENT).ok


@FUZZ
@given(command=st.sampled_from(["get", "cancel", "reschedule"]), job_id=ids_or_present,
       delay=delays)
@example(command="get", job_id=Arg(PRESENT, True), delay=Arg("5s", True))
@example(command="cancel", job_id=Arg(PRESENT, True), delay=Arg("5s", True))
@example(command="reschedule", job_id=Arg(PRESENT, True), delay=Arg("90s", True))
def test_commands_by_id_on_unknown_or_bad_ids(
    fuzz_server: RedisServer, capsys: pytest.CaptureFixture[str], command: str, job_id: Arg,
    delay: Arg,
) -> None:
    queue = f"cf{uuid.uuid4().hex[:8]}"
    client = fuzz_server.client()
    producer = sd.Queue(queue, url=fuzz_server.url)
    producer.enqueue("t", 1, id=PRESENT, delay=60)
    argv = [command, queue, "--url", fuzz_server.url, "--", job_id.value]
    drawn = [job_id]
    if command == "reschedule":
        argv[4:4] = [f"--delay={delay.value}"]
        drawn.append(delay)
    before = snapshot(client, queue)
    began_ms = _server_ms(client)
    code, out, err = run(capsys, argv)
    ended_ms = _server_ms(client)
    assert_clean(code, out, err)
    if all(arg.ok for arg in drawn) and job_id.value == PRESENT:
        assert code == 0 and err == "", (argv, out, err)
        after = producer.get(PRESENT)
        if command == "get":
            assert PRESENT in out and snapshot(client, queue) == before
        elif command == "cancel":
            assert out.strip() == f"cancelled {PRESENT}" and after is None
        else:
            assert after is not None and out.startswith(f"rescheduled {PRESENT}")
            wanted_ms = _seconds(delay.value) * 1000
            assert began_ms + wanted_ms - 1 <= after.due <= ended_ms + wanted_ms + 1, after
    elif all(arg.ok for arg in drawn):
        assert code == 1, (argv, out, err)
        assert "no job" in err and snapshot(client, queue) == before
    else:
        assert code == 2, (argv, out, err)
        assert snapshot(client, queue) == before
    producer.close()


def _server_ms(client: redis.Redis) -> int:
    """The Redis server clock in epoch ms."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def _seconds(delay: str) -> float:
    """A drawn valid delay (``<int><unit>``) in seconds."""
    number, unit = re.fullmatch(r"(\d+)(ms|s|m|h|d)", delay).groups()  # type: ignore[union-attr]
    return int(number) * UNITS[unit]


@FUZZ
@given(group=st.text(max_size=70), min_idle=delays, limit=st.integers(-5, 200_000),
       topic=st.none() | topics)
def test_operator_commands_never_crash(
    fuzz_server: RedisServer, capsys: pytest.CaptureFixture[str], group: str, min_idle: Arg,
    limit: int, topic: Arg | None,
) -> None:
    queue = f"cf{uuid.uuid4().hex[:8]}"
    topic_args = [] if topic is None else [f"--topic={topic.value}"]
    for argv in (["claim", queue, f"--group={group}", f"--min-idle={min_idle.value}",
                  *topic_args],
                 ["dead", "list", queue, f"--limit={limit}", *topic_args],
                 ["stats", queue, "--json"]):
        code, out, err = run(capsys, [*argv, "--url", fuzz_server.url])
        assert_clean(code, out, err)
        if not min_idle.ok and argv[0] == "claim":
            assert code == 2
        if argv[0] == "dead" and not 1 <= limit <= 100_000:
            assert code == 2


def test_nasty_arguments_in_real_processes(fuzz_server: RedisServer) -> None:
    """The same promises hold for the installed command: one line, the right code."""
    url = fuzz_server.url
    cases: list[tuple[list[str], int]] = [
        (["enqueue", "q", "t", "{bad"], 2),
        (["enqueue", "q", "t", "{}", "--delay", "1e400s"], 2),
        (["enqueue", "q", "tö pic", "{}"], 2),
        (["enqueue", "q", "t", "{}", "--id", "x" * 129], 2),
        (["enqueue", "q", "t", "{}", "--header", "=v"], 2),
        (["get", "q", "--", "-\u202e-"], 2),
        (["cancel", "q", "no-such-job"], 1),
        (["reschedule", "q", "x", "--delay", "4000d"], 2),
        (["dead", "list", "q", "--limit", "0"], 2),
        (["claim", "q", "--group", "g g"], 2),
        (["stats", "q", "--interval", "-1s"], 2),
    ]
    results = cli_many([argv for argv, _ in cases], url=url)
    for (argv, expected), done in zip(cases, results, strict=True):
        assert done.returncode == expected, (argv[:4], done.stderr[:300])
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr[:300]
        assert "Traceback" not in done.stderr + done.stdout
    with pytest.raises(sd.NoSuchQueue):  # nothing was created
        sd.Queue("q", url=url).stats()
