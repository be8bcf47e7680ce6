"""The pytest plugin of ``streamdelay[testing]`` (docs/testing.md), as a user's pytest run meets
it: user-style test files run by pytester in a subprocess (``runpytest_subprocess``), where the
plugin comes in by its entry point only, ``sd_server`` starts a private server and
``sd_queue`` gives each test a fresh queue."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(300)
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
ARGS = ("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist")


def test_the_page_examples_pass_as_a_users_tests(pytester: pytest.Pytester) -> None:
    for name in ("shop.py", "test_shop.py"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    result = pytester.runpytest_subprocess(*ARGS, "-v")
    result.assert_outcomes(passed=2)


def test_the_plugin_comes_by_entry_point_and_shares_one_server(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user="""
        import redis
        import streamdelay as sd

        URLS = []

        def test_one(sd_server, sd_queue):
            URLS.append(sd_server.url)
            assert sd_queue.config.url == sd_server.url
            sd_queue.enqueue("t", {"n": 1}, id="a", delay=60)
            assert sd_queue.stats().total.delayed == 1
            assert sd_server.name in ("redis-server", "valkey-server", "embedded Valkey")

        def test_two(sd_server, sd_queue):
            URLS.append(sd_server.url)
            assert URLS[0] == URLS[1]  # one server for the session
            assert sd_queue.enqueue("t", id="a", delay=60).created  # a fresh queue: no "a" yet
            assert redis.Redis.from_url(sd_server.url).ping()
    """)
    result = pytester.runpytest_subprocess(*ARGS, "--fixtures")
    result.stdout.fnmatch_lines(["*sd_server*", "*sd_queue*"])
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=2)


def test_sd_queue_options_and_an_external_server(
        pytester: pytest.Pytester, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest("""
        import pytest

        @pytest.fixture
        def sd_queue_options():
            return {"keep_result": 60}
    """)
    pytester.makepyfile(test_results="""
        import msgspec
        import streamdelay as sd

        class Add(msgspec.Struct):
            a: int
            b: int

        add = sd.task("math.add", body=Add, result=int)

        def test_typed_result_after_drain(sd_server, sd_queue):
            assert sd_server.name == "STREAMDELAY_TEST_URL"
            worker = sd.Worker(sd_queue)

            @worker.handles(add)
            async def run(job: sd.Job[Add]) -> int:
                return job.body.a + job.body.b

            reply = sd_queue.enqueue(add, Add(2, 3), delay=3600)
            outcomes = sd.testing.drain(worker)
            assert [(o.state, o.value) for o in outcomes] == [("succeeded", 5)]
            assert reply.result(timeout=5).value == 5
    """)
    monkeypatch.setenv("STREAMDELAY_TEST_URL", redis_url)
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=1)


def test_a_failed_assert_enqueued_shows_a_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_capture="""
        import streamdelay as sd

        def test_wrong_body():
            q = sd.Queue("orders")
            with sd.testing.capture() as captured:
                q.enqueue("order.close", {"order_id": 41, "reason": "unpaid"}, delay=30)
            captured.assert_enqueued("order.close", body={"order_id": 42, "reason": "unpaid"},
                                     delay=30)
    """)
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*no job of topic 'order.close' enqueued with body={'order_id': 42*delay=30",
        "*differs in: body",
        "*- {'order_id': 42, 'reason': 'unpaid'}",
        "*+ {'order_id': 41, 'reason': 'unpaid'}",
    ])


def test_the_plugin_can_be_turned_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_off="""
        def test_uses(sd_queue):
            pass
    """)
    result = pytester.runpytest_subprocess(*ARGS, "-p", "no:streamdelay")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'sd_queue' not found*"])


def test_without_redis_server_on_path_the_embedded_valkey_serves(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_embedded="""
        import streamdelay as sd

        def test_on_valkey(sd_server, sd_queue):
            assert sd_server.name == "embedded Valkey"
            assert sd_queue.client.info("server")["valkey_version"].startswith("8.")
            worker = sd.Worker(sd_queue)
            worker.handler("t")(lambda job: job.body + 1)
            sd_queue.enqueue("t", 1, delay=86400)
            assert [(o.state, o.value) for o in sd.testing.drain(worker)] == [("succeeded", 2)]
    """)
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no redis-server, no apt
    monkeypatch.delenv("STREAMDELAY_TEST_URL", raising=False)
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=1)
