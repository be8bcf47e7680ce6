"""The HTTP service as a process: health, metrics, the loopback rule, a graceful stop, and the
dashboard's session cookie and CSRF wiring (docs/http.md#serve, docs/http.md#security)."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from tests.redis_server import RedisServer
from tests.web_server import ROOT, WebServer


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _browser() -> tuple[urllib.request.OpenerDirector, http.cookiejar.CookieJar]:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    return opener, jar


def _open(opener: urllib.request.OpenerDirector, request: urllib.request.Request
          ) -> tuple[int, dict[str, str], str]:
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def _form(url: str, fields: dict[str, str], **headers: str) -> urllib.request.Request:
    data = urllib.parse.urlencode(fields).encode()
    return urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", **headers})


def test_health_and_metrics(web_server: WebServer) -> None:
    status, body = web_server.request("GET", "/healthz", token="reader")
    assert status == 200 and body["status"] == "ok"
    assert body["queues"] == {name: True for name in web_server.queues}
    assert web_server.request("GET", "/metrics", token=None)[0] == 401
    assert web_server.request("GET", "/metrics", token="consumer")[0] == 403
    status, text = web_server.request("GET", "/metrics", token="reader")
    assert status == 200
    assert re.search(r'streamdelay_http_requests_total\{method="GET",route="/healthz",'
                     r'status="200"\} [1-9]', text), text[:2000]
    assert 'streamdelay_http_request_seconds_bucket{le="0.0005",method="GET",route="/healthz"}' \
        in text
    for name in web_server.queues:
        assert f'streamdelay_exporter_up{{queue="{name}"}} 1.0' in text
        assert f'streamdelay_promoted_total{{queue="{name}"}}' in text


def test_openapi_document_is_served(web_server: WebServer) -> None:
    status, document = web_server.request("GET", "/openapi.json", token=None)
    assert status == 200 and document["openapi"].startswith("3.1")


def test_static_files_are_shipped(web_server: WebServer) -> None:
    status, text = web_server.request("GET", "/static/streamdelay.css", token=None)
    assert status == 200 and "font-family" in text


def test_dashboard_login_sets_a_signed_httponly_session(web_server: WebServer) -> None:
    opener, _ = _browser()
    html = {"Accept": "text/html"}
    status, headers, _ = _open(opener, urllib.request.Request(web_server.url + "/",
                                                              headers=html))
    assert status == 303 and headers["location"] == "/login"
    status, _, page = _open(opener, urllib.request.Request(web_server.url + "/login"))
    assert status == 200
    csrf = re.search(r'name="_csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    # a wrong token: no session
    status, _, page = _open(opener, _form(web_server.url + "/login", {
        "token": "not-a-token-at-all", "_csrf_token": csrf.group(1)}))
    assert status == 401 and "not valid" in page
    # the right one
    status, headers, _ = _open(opener, _form(web_server.url + "/login", {
        "token": web_server.token("reader"), "_csrf_token": csrf.group(1)}))
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert "streamdelay_session=" in cookie and "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert web_server.token("reader") not in cookie
    status, _, page = _open(opener, urllib.request.Request(web_server.url + "/", headers=html))
    assert status == 200 and "reader" in page


def test_forged_or_tampered_session_cookie_is_refused(web_server: WebServer) -> None:
    opener, _ = _browser()
    _open(opener, urllib.request.Request(web_server.url + "/login"))
    page = _open(opener, urllib.request.Request(web_server.url + "/login"))[2]
    csrf = re.search(r'name="_csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    headers = _open(opener, _form(web_server.url + "/login", {
        "token": web_server.token("reader"), "_csrf_token": csrf.group(1)}))[1]
    value = re.search(r"streamdelay_session=([^;]+)", headers["set-cookie"])
    assert value is not None
    name, expires, mac = value.group(1).split(".")
    admin_name = "YWRtaW4"  # base64url("admin"): the same signature cannot cover it
    for forged in (f"{admin_name}.{expires}.{mac}", f"{name}.{int(expires) + 9999}.{mac}",
                   f"{name}.{expires}.{'A' * len(mac)}", "garbage"):
        request = urllib.request.Request(web_server.url + "/", headers={
            "Accept": "text/html", "Cookie": f"streamdelay_session={forged}"})
        status, headers, _ = _open(urllib.request.build_opener(_NoRedirect), request)
        assert status == 303 and headers["location"] == "/login", forged


def test_cross_site_post_without_csrf_token_is_refused(web_server: WebServer) -> None:
    opener, _ = _browser()
    _open(opener, urllib.request.Request(web_server.url + "/login"))  # sets the CSRF cookie
    status, _, body = _open(opener, _form(web_server.url + "/login", {
        "token": web_server.token("admin")}, Origin="https://evil.example"))
    assert status == 403 and "CSRF" in body
    # a token forged without the server's secret fails as well
    status, _, _ = _open(opener, _form(web_server.url + "/login", {
        "token": web_server.token("admin"), "_csrf_token": "x" * 64 + "y" * 64}))
    assert status == 403


def test_tokens_never_reach_the_logs(web_server: WebServer) -> None:
    web_server.request("GET", "/metrics", token="reader")
    web_server.request("GET", "/healthz", headers={"Authorization": "Bearer wrong-token-xyz"})
    log = web_server.log_text()
    assert "serving queue(s)" in log
    for token, _ in web_server.tokens.values():
        assert token not in log


def test_non_loopback_bind_is_refused_without_tokens(redis_url: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "STREAMDELAY_TOKENS"}
    done = subprocess.run([sys.executable, "-m", "streamdelay", "serve", "--url", redis_url,
                           "--queue", "q", "--host", "0.0.0.0", "--port", "0"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 with no token configured" in done.stderr
    assert done.stderr.count("refusing") == 1 and done.stderr.count("\n") == 1, done.stderr


def test_without_tokens_loopback_is_open_and_said_loudly(shared_redis: RedisServer) -> None:
    with WebServer(shared_redis.url, ["openq"], tokens={}) as server:
        assert server.request("GET", "/metrics", token=None)[0] == 200
        assert "NO TOKEN CONFIGURED" in server.log_text()
        job = {"topic": "t"}
        assert server.request("POST", "/v1/queues/openq/jobs", job, token=None)[0] == 201
        # what a page in the user's browser could send: refused
        refused = [
            ("GET", "/v1/queues/openq/stats", None, {"Host": "rebound.example:8080"}, "host"),
            ("POST", "/v1/queues/openq/jobs", job, {"Origin": "https://evil.example"},
             "origin"),
            ("POST", "/v1/queues/openq/topics/t:pause", None,
             {"Sec-Fetch-Site": "cross-site"}, "origin"),
            ("POST", "/v1/queues/openq/dead:purge", None, {"Origin": "null"}, "origin"),
        ]
        for method, path, body, headers, field in refused:
            status, error = server.request(method, path, body, token=None, headers=headers)
            assert status == 403 and error["error"]["field"] == field, (path, error)
        # the service's own pages and non-browser clients: fine
        own = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
        assert server.request("POST", "/v1/queues/openq/jobs", job, token=None,
                              headers=own)[0] == 201
        assert server.request("GET", "/v1/queues/openq/stats", token=None,
                              headers={"Host": "localhost"})[0] == 200


def test_sigterm_stops_gracefully(shared_redis: RedisServer) -> None:
    server = WebServer(shared_redis.url, ["stopq"]).start()
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 10


def test_redis_away_is_a_503_then_service_resumes(durable_redis: RedisServer) -> None:
    with WebServer(durable_redis.url, ["awayq"]) as server:
        assert server.request("POST", "/v1/queues/awayq/jobs", {"topic": "t", "id": "a"})[0] \
            == 201
        durable_redis.kill()
        status, body = server.request("GET", "/healthz", token=None)
        assert status == 503 and body == {"status": "unavailable"}  # no queue name: anyone
        status, body = server.request("GET", "/healthz", token="reader")
        assert status == 503 and body == {"status": "unavailable", "queues": {"awayq": False}}
        status, error = server.request("POST", "/v1/queues/awayq/jobs", {"topic": "t"})
        assert status == 503 and error["error"]["code"] in ("redis_unavailable", "redis_error")
        assert "Traceback" not in json.dumps(error)
        durable_redis.start()
        deadline = time.monotonic() + 30
        while server.request("GET", "/healthz", token=None)[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        status, job = server.request("GET", "/v1/queues/awayq/jobs/a")
        assert status == 200 and job["id"] == "a"


def test_metrics_count_what_http_consumers_settle(web_server: WebServer) -> None:
    queue = web_server.queues[1]
    base = f"/v1/queues/{queue}"
    for job_id in ("m-ok", "m-retry", "m-dead"):
        web_server.request("POST", f"{base}/jobs", {"topic": "metered", "id": job_id,
                                                    "backoff": [600]})
    outcomes = {"m-ok": ("ack", None), "m-retry": ("fail", {"error": "e"}),
                "m-dead": ("fail", {"error": "e", "dead": True})}
    taken = 0
    deadline = time.monotonic() + 20
    while taken < 3 and time.monotonic() < deadline:
        status, answer = web_server.request("POST", f"{base}/topics/metered:reserve", {
            "group": "meter", "wait_ms": 2000, "count": 3}, token="consumer")
        for delivery in answer["deliveries"] if status == 200 else []:
            action, body = outcomes[delivery["id"]]
            assert web_server.request("POST", f"{base}/deliveries/{delivery['receipt']}:"
                                      f"{action}", body, token="consumer")[0] == 200
            taken += 1
    assert taken == 3
    text = web_server.request("GET", "/metrics", token="reader")[1]
    for outcome in ("handled", "retried", "dead"):
        assert (f'streamdelay_jobs_total{{group="meter",outcome="{outcome}",queue="{queue}",'
                f'topic="metered"}} 1.0') in text, text[-3000:]
    assert re.search(rf'streamdelay_lateness_seconds_count\{{queue="{queue}",topic="metered"'
                     rf'\}} 3\.0', text)


def test_no_token_in_debug_logs_either(shared_redis: RedisServer) -> None:
    with WebServer(shared_redis.url, ["debugq"], "--log-level", "debug") as server:
        server.request("POST", "/v1/queues/debugq/jobs", {"topic": "t"}, token="writer")
        server.request("GET", "/v1/queues/debugq/stats", token="consumer")
        server.request("GET", "/v1/queues/debugq/stats", headers={
            "Authorization": "Bearer " + server.token("admin") + "x"})
        server.request("POST", "/v1/queues/debugq/topics/t:reserve", {"wait_ms": 10},
                       token="consumer")
        log = server.log_text()
    assert '"level":"debug"' in log or '"level": "debug"' in log
    assert "color_message" not in log
    for token, _ in server.tokens.values():
        assert token not in log


def test_no_dispatch_leaves_promoting_to_workers(shared_redis: RedisServer) -> None:
    with WebServer(shared_redis.url, ["nodispq"], "--no-dispatch") as server:
        base = "/v1/queues/nodispq"
        server.request("POST", f"{base}/jobs", {"topic": "t", "id": "later", "delay": 0.1})
        assert server.request("POST", f"{base}/topics/t:reserve", {"wait_ms": 1500})[0] == 204
        assert server.request("GET", f"{base}/jobs/later")[1]["state"] == "delayed"
        text = server.request("GET", "/metrics")[1]
        assert "streamdelay_promoted_total" not in text


def test_only_the_public_openapi_document_is_served(web_server: WebServer) -> None:
    assert web_server.request("GET", "/openapi.json", token=None)[0] == 200
    for path in ("/schema", "/schema/openapi.json"):
        status, error = web_server.request("GET", path)
        assert status == 404 and error["error"]["code"] == "not_found"


def test_a_taken_port_is_one_line_and_exit_1(web_server: WebServer) -> None:
    done = subprocess.run([sys.executable, "-m", "streamdelay", "serve", "--url",
                           web_server.redis_url, "--queue", "q", "--port",
                           str(web_server.port)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "STREAMDELAY_TOKENS": "a:abcdefghijklmnop:read"},
                          timeout=60)
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{web_server.port}" in done.stderr.splitlines()[-1]
