"""docs/http.md runs: its curl examples are the parts of docs/examples/http/walkthrough.sh, in
order, and the script runs against a live ``streamdelay serve`` with the answers the page
describes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.redis_server import RedisServer
from tests.web_server import ROOT, WebServer

PAGE = ROOT / "docs" / "http.md"
SCRIPT = ROOT / "docs" / "examples" / "http" / "walkthrough.sh"
BLOCK = re.compile(r"<!-- tested: (http-[\w-]+) -->\n```bash\n(.*?)```", re.DOTALL)


def test_the_page_shows_the_walkthrough_in_order() -> None:
    blocks = BLOCK.findall(PAGE.read_text())
    assert [name for name, _ in blocks] == [
        "http-enqueue", "http-batch", "http-inspect", "http-search", "http-pause", "http-consume",
        "http-fail", "http-errors"]
    script = SCRIPT.read_text()
    for name, code in blocks:
        section = name.removeprefix("http-")
        assert f"# --- {section}\n{code}" in script, f"{name} differs from the script"


def test_the_walkthrough_runs_against_a_live_service(own_redis: RedisServer) -> None:
    assert shutil.which("curl") and shutil.which("jq"), "make tools installs curl and jq"
    with WebServer(own_redis.url, ["orders"]) as server:
        done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "SD": server.url,
                                                "TOKEN": server.token("admin")})
        log = server.log_text()
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('{"id":"close-42","due":') and '"created":true' in lines[0]
    assert lines[1:] == [
        "200",
        '[{"id":"close-43","created":true},{"id":"close-44","created":true}]',
        '{"id":"close-42","state":"delayed","body":{"order_id":42},"attempts":0}',
        '{"id":"close-42","done":true}',
        '["close-43","close-42"]',
        '{"delayed":3,"ready":0}',
        '{"id":"close-43","done":true}',
        '{"id":"mail-1","body":{"to":"ada@example.com"},"attempt":1}',
        '{"outcome":"touched"}',
        '{"outcome":"acked"}',
        '"stale_receipt"',
        '{"outcome":"retried"}',
        '{"outcome":"dead"}',
        '{"id":"mail-2","attempts":2,"error":"SMTP 451 (attempt 2)"}',
        '{"count":1}',
        '{"topic":"mail.send","paused":true,"changed":true}',
        '{"topic":"mail.send","paused":false,"changed":true}',
        '{"error":{"code":"invalid","message":"ttr: 500ms is out of range [1s, 7d]",'
        '"field":"ttr"}}',
        "401",
        '["close-44"]',
        '{"matched":2,"changed":0,"cursor":null}',
    ]
    assert "Traceback" not in log


def test_the_page_is_in_the_site_navigation() -> None:
    assert "http.md" in (ROOT / "mkdocs.yml").read_text()
    assert Path(SCRIPT).stat().st_mode & 0o111


def test_the_page_defines_its_shell_variables_before_using_them() -> None:
    """A newcomer copies the first example: ``SD`` and ``AUTH`` are set above it."""
    page = PAGE.read_text()
    first_use = page.index('"$SD')
    assert page.index("export SD=") < first_use and page.index("export AUTH=") < first_use
