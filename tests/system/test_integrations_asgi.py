"""ASGI integrations (docs/integrations.md), each served by a real uvicorn process against a
real redis-server: the FastAPI example of the page (a worker in the app's lifespan, the
service mounted under /streamdelay), and hosts that mount the service without its lifespan
(Starlette under /ops/sd, Litestar under /tools/sd): links, assets, redirects and the API work
under the mount, and the service starts on its first request.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import streamdelay as sd
from tests.support.redis_server import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
TOKEN = "ops-" + "e5" * 12
TOKENS = f"ops:{TOKEN}:read,write,admin"
START_TIMEOUT = 30.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class Uvicorn:
    """``uvicorn MODULE:APP`` on a free loopback port, from ``cwd``."""

    def __init__(self, target: str, cwd: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", target, "--host", "127.0.0.1", "--port",
             str(self.port)], cwd=cwd, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.proc.poll() is None, f"uvicorn exited:\n{self.proc.communicate()[0]}"
            try:
                self.request("/")
                return
            except OSError:
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.1)

    def request(self, path: str, method: str = "GET", auth: bool = True,
                body: Any = None) -> tuple[int, dict[str, str], bytes]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, method=method, data=data)
        if auth:
            req.add_header("Authorization", f"Bearer {TOKEN}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with _OPENER.open(req, timeout=30) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()

    def json(self, path: str, method: str = "GET", body: Any = None) -> Any:
        status, _, data = self.request(path, method, body=body)
        assert status in (200, 201), (path, status, data)
        return json.loads(data)

    def stop(self) -> str:
        """SIGTERM, then everything it printed (uvicorn re-raises the signal once the app's
        shutdown is complete: a death by SIGTERM after that line is its normal end)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=60)
        assert self.proc.returncode in (0, -signal.SIGTERM), out
        return out


@pytest.fixture
def env(own_redis: RedisServer) -> Iterator[dict[str, str]]:
    values = dict(os.environ, STREAMDELAY_URL=own_redis.url, STREAMDELAY_TOKENS=TOKENS,
                  PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    yield values


def _check_mounted_pages(server: Uvicorn, prefix: str, queue: str) -> None:
    """The dashboard under ``prefix``: every link of a page and its assets under it, a page
    without a session redirected to the mount's login, the live fragments served there."""
    status, headers, page = server.request(f"{prefix}/q/{queue}")
    assert status == 200 and headers["content-type"].startswith("text/html")
    text = page.decode()
    links = re.findall(r'\s(?:href|src|action|data-live)="([^"]*)"', text)
    assert links, text[:500]
    site = [link for link in links if not link.startswith(("data:", "#", "?"))]
    assert site and all(link.startswith(prefix + "/") for link in site), site
    for asset in re.findall(r'\s(?:src|href)="([^"]*/static/[^"]*)"', text):
        status, headers, body = server.request(asset)
        assert status == 200 and body, asset
    assert int(server.request(f"{prefix}/static/streamdelay.css")[1]["content-length"]) > 0
    live = re.findall(r'data-live="([^"]*)"', text)
    assert live
    for url in live:
        status, _, body = server.request(url.replace("&amp;", "&"))
        assert status == 200, url
        assert all(link.startswith(prefix + "/") for link in
                   re.findall(r'\shref="(/[^"]*)"', body.decode()))
    status, headers, _ = server.request(f"{prefix}/q/{queue}", auth=False)
    assert status == 303
    assert headers["location"] == f"{prefix}/login?next=%2Fq%2F{queue}"
    status, _, login = server.request(headers["location"], auth=False)
    assert status == 200 and f'action="{prefix}/login"' in login.decode()


def test_fastapi_example_serves_worker_and_mounted_service(env: dict[str, str]) -> None:
    server = Uvicorn("fastapi_app:app", EXAMPLES, env)
    try:
        done = server.json("/orders/42/close", "POST")
        assert server.json(f"/jobs/{done['job']}?wait=20") == {
            "state": "succeeded", "value": {"closed": 42}, "error": None}
        # the mounted API and dashboard see the app's queue
        later = server.json("/orders/43/close?delay=3600", "POST")
        info = server.json(f"/streamdelay/v1/queues/orders/jobs/{later['job']}")
        assert (info["state"], info["body"]["order_id"]) == ("delayed", 43)
        assert server.json("/streamdelay/healthz") == {"status": "ok",
                                                        "queues": {"orders": True}}
        _check_mounted_pages(server, "/streamdelay", "orders")
        # a job running at shutdown finishes: the lifespan stops the worker gracefully
        slow = server.json("/orders/44/close?work_seconds=3", "POST")["job"]
        deadline = time.monotonic() + 20
        while True:  # SIGTERM once it runs (a 404: it ran and ended already, a slow machine)
            status, _, data = server.request(f"/streamdelay/v1/queues/orders/jobs/{slow}")
            if status == 404 or json.loads(data)["state"] == "reserved":
                break
            assert time.monotonic() < deadline, "the slow job never started"
            time.sleep(0.05)
    finally:
        out = server.stop()
    assert "Application shutdown complete" in out, out
    with sd.Queue("orders", url=env["STREAMDELAY_URL"]) as queue:
        result = queue.result(slow)
        assert result is not None and (result.state, result.value) == (
            "succeeded", {"closed": 44})
        stats = queue.stats().topics["order.close"]
        assert (stats.reserved, stats.delayed) == (0, 1)


@pytest.mark.parametrize(("target", "prefix"), [
    ("tests.support.apps.mounted_service_app:starlette_app", "/ops/sd"),
    ("tests.support.apps.mounted_service_app:litestar_app", "/tools/sd"),
    ("tests.support.apps.mounted_service_app:direct_app", ""),
])
def test_service_mounted_without_its_lifespan_starts_on_first_use(
        env: dict[str, str], target: str, prefix: str) -> None:
    """Mounted, the first request starts the service; served as it is, its lifespan."""
    queue = f"m{uuid.uuid4().hex[:8]}"
    server = Uvicorn(target, ROOT, {**env, "MOUNTED_QUEUE": queue})
    try:
        if prefix:
            assert server.request("/")[2] == b"the host app"
        reply = server.json(f"{prefix}/v1/queues/{queue}/jobs", "POST",
                            {"topic": "t", "body": {"n": 1}, "delay": 0.3})
        # no worker: the mounted service's dispatcher (started by the first request) promotes
        deadline = time.monotonic() + 20
        while server.json(f"{prefix}/v1/queues/{queue}/jobs/{reply['id']}")["state"] != "ready":
            assert time.monotonic() < deadline, "the mounted service's dispatcher never ran"
            time.sleep(0.05)
        _check_mounted_pages(server, prefix, queue)
    finally:
        out = server.stop()
    if not prefix:  # the service's own lifespan ran, both ways
        assert "Application startup complete" in out and "Application shutdown complete" in out
        assert "unsupported" not in out and "failed" not in out.lower(), out


def test_mounted_dashboard_in_a_browser_logs_in_refreshes_and_logs_out_under_its_path(
        env: dict[str, str]) -> None:
    """Headless Chromium on the Starlette host: the login form, the live refresh and the
    script's return to the login page all stay under /ops/sd."""
    from tests.support.browser import chromium

    queue, prefix = f"m{uuid.uuid4().hex[:8]}", "/ops/sd"
    server = Uvicorn("tests.support.apps.mounted_service_app:starlette_app", ROOT,
                     {**env, "MOUNTED_QUEUE": queue})
    try:
        with chromium() as browser:
            context = browser.new_context()
            page = context.new_page()
            assets: list[tuple[str, int]] = []
            page.on("response", lambda r: assets.append((r.url, r.status))
                    if "/static/" in r.url else None)
            page.goto(f"{server.base}{prefix}/q/{queue}")
            assert page.url == f"{server.base}{prefix}/login?next=%2Fq%2F{queue}"
            page.fill("input[name=token]", TOKEN)
            with page.expect_navigation():
                page.click(f"form[action='{prefix}/login'] button")
            assert page.url == f"{server.base}{prefix}/q/{queue}"
            assert {url.split(prefix, 1)[1] for url, status in assets if status == 200} == {
                "/static/streamdelay.css", "/static/dashboard.js"}
            # a job enqueued after the page loaded shows up through the live refresh
            server.json(f"{prefix}/v1/queues/{queue}/jobs", "POST", {"topic": "t", "body": 1})
            page.wait_for_function(
                "() => { const e = document.querySelector("
                "'tr[data-topic=\"t\"] td[data-count=\"ready\"]'); "
                "return e !== null && e.textContent.trim() === '1'; }", timeout=20_000)
            # the session gone, the next refresh answers 401: the script goes to the login
            context.clear_cookies()
            # (each live element's refresh sets the location: a navigation may abort another)
            deadline = time.monotonic() + 20
            while page.url != f"{server.base}{prefix}/login?next=%2Fq%2F{queue}":
                assert time.monotonic() < deadline, page.url
                page.wait_for_timeout(100)
            page.wait_for_selector(f"form[action='{prefix}/login'] input[name=token]")
            context.close()
    finally:
        server.stop()
