"""The dashboard at ``/`` (docs/dashboard.md): server-rendered pages, assets under ``/static``.

``web.app.create_app`` includes ``dashboard_routes()`` and renders templates from
``TEMPLATE_DIR``. This module is a placeholder: a page at ``/`` and the login / logout that turn
a token into a signed session cookie (``web.auth.start_session``); the dashboard replaces the
contents, not the wiring. Guards: ``web.auth.requires("read")`` on pages (a 401 on a page
redirects to ``/login``), ``requires("write")`` / ``requires("admin")`` on actions; every
state-changing form carries ``{{ csrf_input | safe }}`` (Litestar's CSRF check).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litestar import Request, Response, get, post
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER

from ..auth import end_session, principal_of, requires, start_session

TEMPLATE_DIR = Path(__file__).parent / "templates"
FORM = Body(media_type=RequestEncodingType.URL_ENCODED)


@get("/", guards=[requires("read")], include_in_schema=False)
async def index(request: Request[Any, Any, Any]) -> Template:
    """The overview page (placeholder)."""
    principal = principal_of(request)
    return Template(template_name="index.html", context={
        "user": principal.name if principal else "", "queues": list(request.app.state.queues)})


@get("/login", include_in_schema=False)
async def login_page() -> Template:
    """The login form: a token in, a session cookie out."""
    return Template(template_name="login.html", context={"failed": False})


@post("/login", include_in_schema=False, status_code=HTTP_303_SEE_OTHER)
async def login(request: Request[Any, Any, Any],
                data: dict[str, str] = FORM) -> Response[Any]:
    """Check the token; on success set the session cookie and go to ``/``."""
    state = request.app.state
    principal = state.tokens.authenticate(str(data.get("token", "")).strip())
    if principal is None:
        return Template(template_name="login.html", context={"failed": True}, status_code=401)
    response: Response[Any] = Redirect("/", status_code=HTTP_303_SEE_OTHER)
    start_session(response, principal, state.signer, state.settings.secure_cookies)
    return response


@post("/logout", include_in_schema=False, status_code=HTTP_303_SEE_OTHER)
async def logout() -> Response[Any]:
    """End the session."""
    response: Response[Any] = Redirect("/login", status_code=HTTP_303_SEE_OTHER)
    end_session(response)
    return response


def dashboard_routes() -> list[Any]:
    """The dashboard's route handlers, included by ``web.app.create_app``."""
    return [index, login_page, login, logout]
