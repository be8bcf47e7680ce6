"""The dashboard's forms: log in / log out, and the actions with their confirm step
(docs/dashboard.md#actions). Every POST here passes the CSRF check of ``web/csrf.py`` (the
hidden ``_csrf_token`` field of each form: an HMAC of the session cookie, or before a login of
the ``csrftoken`` cookie)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from litestar import Response, get, post
from litestar.exceptions import (
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
)
from litestar.params import FromPath, FromQuery, URLEncodedBody

from ...base.errors import StreamdelayError, WorkerNotFound
from ..auth import end_session, start_session
from .actions import ACTIONS, action, confirm_text, perform
from .pages import (
    Req,
    base_context,
    html,
    local_path,
    principal,
    problem,
    see_other,
    served,
    status_of,
)
from .render import render

Form = URLEncodedBody[dict[str, str]]  # a form's fields (the explicit body style)


def _may(request: Req, name: str) -> None:
    """403 unless the principal holds the scope of action ``name``."""
    who = principal(request)
    scope = action(name).scope
    if not who.allows(scope):
        raise PermissionDeniedException(f"the token {who.name!r} lacks the {scope!r} scope")


@get("/login", include_in_schema=False)
async def login_page(request: Req, next: FromQuery[str] = "/") -> Response[Any]:
    """The login form: a token in, a signed session cookie out."""
    if not request.app.state.tokens.configured:  # open mode (loopback only): nothing to do
        return see_other(local_path(next))
    return html(render("login.html", **base_context(request), next=local_path(next),
                       error=None))


@post("/login", include_in_schema=False)
async def login(request: Req, data: Form) -> Response[Any]:
    """Check the token; on success set the session cookie and go where the user was going."""
    state = request.app.state
    target = local_path(data.get("next"))
    who = state.tokens.authenticate(str(data.get("token", "")).strip())
    if who is None:
        return html(render("login.html", **base_context(request), next=target,
                           error="That token is not valid here."), 401)
    response = see_other(target)
    start_session(response, who, state.signer, state.settings.secure_cookies)
    return response


@post("/logout", include_in_schema=False)
async def logout(request: Req) -> Response[Any]:
    """End the session."""
    response = see_other("/login")
    end_session(response, request.app.state.signer)
    return response


@get("/q/{queue:str}/confirm", include_in_schema=False)
async def confirm(request: Req, queue: FromPath[str], action: FromQuery[str],
                  id: FromQuery[str] = "", topic: FromQuery[str] = "", back: FromQuery[str] = "",
                  name: FromQuery[str] = "") -> Response[str]:
    """The confirm step of an action: what it will do, and the form that does it (nothing
    changes on a GET); ``name`` a worker's, for quiet and stop."""
    served(request, queue)
    try:
        _may(request, action)
        sentence = confirm_text(action, queue, id or None, topic or None, name or None)
    except StreamdelayError as exc:
        return problem(request, "Cannot do that", str(exc), 400, queue)
    home = (f"/q/{quote(queue)}/job?{urlencode({'id': id})}" if id
            else f"/q/{quote(queue)}/worker?{urlencode({'name': name})}" if name
            else f"/q/{quote(queue)}")
    return html(render("confirm.html", **base_context(request, queue), act=ACTIONS[action],
                       sentence=sentence, job_id=id, topic=topic, worker=name,
                       back=local_path(back, home)))


@post("/q/{queue:str}/act", include_in_schema=False)
async def act(request: Req, queue: FromPath[str], data: Form) -> Response[Any]:
    """Perform a confirmed action, then go back to the page it came from, saying what
    happened (the page shows the new state)."""
    q = served(request, queue)
    name = data.get("action", "")
    back = local_path(data.get("back"), f"/q/{quote(queue)}")
    try:
        _may(request, name)
        said = await perform(q, name, data.get("id") or None, data.get("topic") or None,
                             data.get("delay"), data.get("name") or None)
    except StreamdelayError as exc:
        status = 404 if isinstance(exc, WorkerNotFound) else status_of(exc)
        return problem(request, "That did not work", str(exc), status, queue, back=back)
    joiner = "&" if "?" in back else "?"
    return see_other(f"{back}{joiner}{urlencode({'done': said})}")


def to_login(request: Req, exc: NotAuthorizedException) -> Response[Any]:
    """A page without a session goes to ``/login`` (and comes back); a fragment answers 401
    (the live script then goes to ``/login``)."""
    path = request.url.path
    if "/fragment/" in path or request.method != "GET":
        return html("log in first", 401)
    where = path + (f"?{request.url.query}" if request.url.query else "")
    return see_other("/login" if where == "/" else f"/login?{urlencode({'next': where})}")


def forbidden(request: Req, exc: PermissionDeniedException) -> Response[str]:
    """A page for a token without the scope an action needs."""
    return problem(request, "Not allowed", str(exc.detail), 403)


def not_found(request: Req, exc: NotFoundException) -> Response[str]:
    """A page for a queue that is not served here (or a path that does not exist)."""
    return problem(request, "Not found", str(exc.detail), 404)
