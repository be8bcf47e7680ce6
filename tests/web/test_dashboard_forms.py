"""The dashboard's pages and forms over plain HTTP against a real ``streamdelay serve``
(docs/dashboard.md#security): scopes per action, CSRF on every POST, nothing changes on a GET,
no open redirect, errors as pages, fragments answer 401 without a session."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

import streamdelay as sd
from tests.redis_server import RedisServer
from tests.web_server import WebServer


class Session:
    """A cookie-keeping client that does not follow redirects, logged in as one token."""

    def __init__(self, server: WebServer, name: str | None) -> None:
        self.server = server
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar),
                                                  _NoRedirect)
        self.csrf = ""
        if name is not None:
            status, _, _ = self.post("/login", {"token": server.token(name)})
            assert status == 303, status

    def open(self, request: urllib.request.Request) -> tuple[int, dict[str, str], str]:
        """Send ``request``; (status, headers, body). Keeps the page's CSRF token."""
        try:
            with self.opener.open(request, timeout=10) as answer:
                result = answer.status, dict(answer.headers), answer.read().decode()
        except urllib.error.HTTPError as exc:
            result = exc.code, dict(exc.headers), exc.read().decode()
        found = re.search(r'name="_csrf_token" value="([^"]+)"', result[2])
        if found:
            self.csrf = found.group(1)
        return result

    def get(self, path: str) -> tuple[int, dict[str, str], str]:
        """GET a dashboard path."""
        return self.open(urllib.request.Request(self.server.url + path,
                                                headers={"Accept": "text/html"}))

    def post(self, path: str, fields: dict[str, str], csrf: bool = True
             ) -> tuple[int, dict[str, str], str]:
        """POST a form (with the CSRF token of the last page unless ``csrf=False``)."""
        if csrf and not self.csrf:
            self.get("/login")
        data = dict(fields, **({"_csrf_token": self.csrf} if csrf else {}))
        return self.open(urllib.request.Request(
            self.server.url + path, data=urllib.parse.urlencode(data).encode(), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"}))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@pytest.fixture
def queue(web_server: WebServer) -> Iterator[sd.Queue]:
    """The first served queue, with a delayed job ``j1``."""
    q = sd.Queue(web_server.queues[0], url=web_server.redis_url)
    q.enqueue("t", {"n": 1}, id="j1", delay=3600)
    yield q
    q.cancel("j1")
    q.close()


def test_pages_without_a_session_go_to_login_and_fragments_answer_401(
        web_server: WebServer, queue: sd.Queue) -> None:
    anonymous = Session(web_server, None)
    status, headers, _ = anonymous.get(f"/q/{queue.name}/job?id=j1")
    assert status == 303
    assert headers["location"] == "/login?" + urllib.parse.urlencode(
        {"next": f"/q/{queue.name}/job?id=j1"})
    assert anonymous.get(f"/q/{queue.name}/fragment/topics")[0] == 401
    status, _, page = Session(web_server, "admin").get(f"/q/{queue.name}/job?id=j1")
    assert status == 200 and "confirm?action=cancel&amp;id=j1" in page


def test_a_reader_sees_but_cannot_act(web_server: WebServer, queue: sd.Queue) -> None:
    reader = Session(web_server, "reader")
    status, _, page = reader.get(f"/q/{queue.name}")
    assert status == 200 and 'data-topic="t"' in page
    assert "confirm?action" not in page  # it offers no action the token may not do
    assert "confirm?action" not in reader.get(f"/q/{queue.name}/job?id=j1")[2]
    status, _, page = reader.get(f"/q/{queue.name}/confirm?action=cancel&id=j1")
    assert status == 403 and "lacks the &#39;write&#39; scope" in page
    status, _, _ = reader.post(f"/q/{queue.name}/act", {"action": "cancel", "id": "j1"})
    assert status == 403
    writer = Session(web_server, "writer")  # write: cancel yes, pause no
    assert writer.get(f"/q/{queue.name}/confirm?action=pause&topic=t")[0] == 403
    assert queue.get("j1") is not None


def test_every_post_needs_the_csrf_token_and_a_get_changes_nothing(
        web_server: WebServer, queue: sd.Queue) -> None:
    admin = Session(web_server, "admin")
    status, _, page = admin.get(f"/q/{queue.name}/confirm?action=cancel&id=j1")
    assert status == 200 and 'action="/q/' in page and queue.get("j1") is not None
    status, _, _ = admin.post(f"/q/{queue.name}/act", {"action": "cancel", "id": "j1"},
                              csrf=False)
    assert status == 403 and queue.get("j1") is not None
    status, headers, _ = admin.post(f"/q/{queue.name}/act", {
        "action": "cancel", "id": "j1", "back": "https://evil.example/x"})
    assert status == 303 and queue.get("j1") is None, _
    assert headers["location"] == f"/q/{queue.name}?done=job+j1+cancelled"  # no open redirect
    status, _, _ = admin.post("/logout", {}, csrf=False)
    assert status == 403  # log-out is a form too


def test_bad_requests_are_pages_that_say_what_is_wrong(web_server: WebServer,
                                                       queue: sd.Queue) -> None:
    admin = Session(web_server, "admin")
    status, _, page = admin.get(f"/q/{queue.name}/confirm?action=drop&id=j1")
    assert status == 400 and "action: &#39;drop&#39; is not one of" in page
    status, _, page = admin.get(f"/q/{queue.name}/jobs?state=delayed&cursor=nonsense")
    assert status == 400 and "cursor" in page
    status, _, page = admin.get("/q/not-served/jobs")
    assert status == 404 and "is not served here" in page
    status, _, page = admin.get(f"/search?queue={queue.name}&id=nope")
    assert status == 404 and "There is no job" in page
    status, headers, _ = admin.get(f"/search?queue={queue.name}&id=j1")
    assert status == 303 and headers["location"] == f"/q/{queue.name}/job?id=j1"
    status, _, page = admin.post(f"/q/{queue.name}/act", {
        "action": "reschedule", "id": "j1", "delay": "soon"})
    assert status == 400 and "delay: &#39;soon&#39; is not a duration" in page
    status, headers, _ = admin.post(f"/q/{queue.name}/act", {
        "action": "reschedule", "id": "j1", "delay": "2h",
        "back": f"/q/{queue.name}/job?id=j1"})
    assert status == 303 and "done=job+j1+due+in+2h" in headers["location"]
    info = queue.get("j1")
    assert info is not None and info.state == "delayed"


def test_redis_away_is_a_page_that_says_so(own_redis: RedisServer) -> None:
    name = f"away{uuid.uuid4().hex[:6]}"
    sd.Queue(name, url=own_redis.url).enqueue("t", id="j1", delay=3600)
    with WebServer(own_redis.url, [name]) as server:
        admin = Session(server, "admin")
        assert admin.get(f"/q/{name}")[0] == 200
        own_redis.kill()
        with ThreadPoolExecutor(3) as pool:  # each answers after the queue's 5 s of retries
            queue_page, overview, fragment = pool.map(
                admin.get, [f"/q/{name}", "/", f"/q/{name}/fragment/topics"])
        assert queue_page[0] == 503 and "<h1>Queue " in queue_page[2]
        assert "Traceback" not in queue_page[2]
        assert overview[0] == 200 and 'class="error"' in overview[2]  # the card says so
        assert fragment[0] == 503  # the live script then shows "update failed, retrying"


# Where a browser may be sent after a login or an action (docs/security.md#redirects): a tab,
# a new line or a space inside a path is dropped by browsers (``/\t/evil`` is read as
# ``//evil``), a backslash reads as a slash, ``//`` starts another host; a CR or LF would split
# the Location header. Each falls back to ``/``.
BAD_NEXT = ["/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "/\r\nX-Evil: 1",
            "/ /evil.example", "/\x0b/evil.example", "/\x00/evil.example", "/\x7f/evil.example",
            "/\u00a0/evil.example", "/\u2028/evil.example", "/\x85/evil.example",
            "/\\evil.example", "\\\\evil.example", "//evil.example", "///evil.example",
            "/q/x//evil.example", "https://evil.example", "evil.example", "", "javascript:x"]


@pytest.mark.parametrize("bad", BAD_NEXT)
def test_no_redirect_leaves_the_site(web_server: WebServer, bad: str) -> None:
    visitor = Session(web_server, None)
    logged = len(web_server.log_text())
    status, headers, _ = visitor.post("/login", {"token": web_server.token("reader"),
                                                 "next": bad})
    assert status == 303 and headers["location"] == "/", headers
    assert "Traceback" not in web_server.log_text()[logged:]


def test_a_redirect_inside_the_site_is_kept(web_server: WebServer) -> None:
    for good, location in (("/q/a/job?id=x%2Fy", "/q/a/job?id=x%2Fy"), ("/", "/"),
                           ("/q/a/jobs?state=dead&topic=t", "/q/a/jobs?state=dead&topic=t"),
                           ("/q/a/job?id=\u20ac", "/q/a/job?id=%E2%82%AC")):
        status, headers, _ = Session(web_server, None).post(
            "/login", {"token": web_server.token("reader"), "next": good})
        assert status == 303 and headers["location"] == location


def _cookie_value(session: Session, name: str) -> str:
    return next(c.value for c in session.jar if c.name == name and c.value is not None)


def test_an_attackers_csrf_pair_fails_with_a_victims_session(web_server: WebServer,
                                                             queue: sd.Queue) -> None:
    """An anonymous GET /login gives anyone a CSRF token and its cookie; planted in a
    victim's browser (a sibling subdomain, plain HTTP) next to the victim's session cookie they
    must not pass: the form token is derived from the session (docs/security.md#csrf)."""
    attacker = Session(web_server, None)
    attacker.get("/login")
    pair_token = attacker.csrf
    pair_cookie = _cookie_value(attacker, "csrftoken")
    victim = Session(web_server, "admin")
    session = _cookie_value(victim, "streamdelay_session")
    request = urllib.request.Request(
        web_server.url + f"/q/{queue.name}/act", method="POST",
        data=urllib.parse.urlencode({"action": "cancel", "id": "j1",
                                     "_csrf_token": pair_token}).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded",
                 "Cookie": f"streamdelay_session={session}; csrftoken={pair_cookie}"})
    status, _, _ = Session(web_server, None).open(request)
    assert status == 403 and queue.get("j1") is not None
    # another session's token does not pass either: each token belongs to its session
    other = Session(web_server, "writer")
    other.get(f"/q/{queue.name}")
    request.data = urllib.parse.urlencode({"action": "cancel", "id": "j1",
                                           "_csrf_token": other.csrf}).encode()
    assert Session(web_server, None).open(request)[0] == 403 and queue.get("j1") is not None
    victim.get(f"/q/{queue.name}/confirm?action=cancel&id=j1")  # the victim's own form
    status, _, _ = victim.post(f"/q/{queue.name}/act", {"action": "cancel", "id": "j1"})
    assert status == 303 and queue.get("j1") is None


def test_secure_cookies_use_host_prefixed_names(shared_redis: RedisServer) -> None:
    """With --secure-cookies both cookies are ``__Host-`` cookies (Secure, Path=/, no Domain:
    a sibling subdomain or plain HTTP cannot set them), and the unprefixed names are ignored."""
    with WebServer(shared_redis.url, [f"sec{uuid.uuid4().hex[:6]}"], "--secure-cookies"
                   ) as server:
        opener = urllib.request.build_opener(_NoRedirect)
        with opener.open(server.url + "/login", timeout=10) as answer:
            page, set_cookie = answer.read().decode(), answer.headers.get_all("set-cookie")
        [csrf_cookie] = [c for c in set_cookie if c.startswith("__Host-csrftoken=")]
        assert "secure" in csrf_cookie.lower() and "path=/" in csrf_cookie.lower()
        assert "domain" not in csrf_cookie.lower()
        found = re.search(r'name="_csrf_token" value="([^"]+)"', page)
        assert found is not None
        pair = csrf_cookie.split(";")[0]
        login = urllib.request.Request(
            server.url + "/login", method="POST", headers={
                "Content-Type": "application/x-www-form-urlencoded", "Cookie": pair},
            data=urllib.parse.urlencode({"token": server.token("reader"),
                                         "_csrf_token": found.group(1)}).encode())
        try:
            opener.open(login, timeout=10)
            raise AssertionError("a 303 was expected")
        except urllib.error.HTTPError as exc:
            assert exc.code == 303
            [session] = [c for c in exc.headers.get_all("set-cookie")
                         if c.startswith("__Host-streamdelay_session=")]
        assert all(part in session.lower() for part in ("secure", "path=/", "httponly"))
        assert "domain" not in session.lower()
        value = session.split(";")[0].split("=", 1)[1]
        for cookie, expected in ((f"__Host-streamdelay_session={value}", 200),
                                 (f"streamdelay_session={value}", 303)):
            request = urllib.request.Request(server.url + "/", headers={
                "Accept": "text/html", "Cookie": cookie})
            try:
                with opener.open(request, timeout=10) as answer:
                    status = answer.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            assert status == expected, cookie
