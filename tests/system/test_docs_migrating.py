"""docs/migrating.md: every streamdelay snippet of the page runs, as a program of its own
against its own redis-server, and its asserts hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "migrating.md"
BLOCK = re.compile(r"<!-- tested: (migrate-[\w-]+) -->\n```python\n(.*?)```", re.DOTALL)
SNIPPETS = dict(BLOCK.findall(PAGE.read_text()))


def test_the_page_has_a_snippet_for_each_topic() -> None:
    assert sorted(SNIPPETS) == ["migrate-delay", "migrate-periodic", "migrate-results",
                                "migrate-retries", "migrate-revoke", "migrate-workflows"]
    for name, code in SNIPPETS.items():
        assert "assert " in code, f"{name} checks nothing"


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_runs(name: str, own_redis: RedisServer, tmp_path: Path) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(SNIPPETS[name])
    env = dict(os.environ, STREAMDELAY_URL=own_redis.url, PYTHONUNBUFFERED="1")
    env.pop("STREAMDELAY_PARTITIONS", None)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, f"{name}:\n{done.stdout}\n{done.stderr}"
