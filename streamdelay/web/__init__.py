"""The HTTP service of ``streamdelay serve`` (extra ``streamdelay[web]``): the JSON API of
docs/http.md, the dashboard (docs/dashboard.md), ``/metrics`` and ``/healthz``.

Importing this package does not import Litestar: ``settings`` and ``tokens`` are plain Python,
so the CLI can check its options (and say which extra is missing) before the stack is loaded.
``app.create_app(settings)`` builds the ASGI application; ``asgi(...)`` (below) the same
service, relocatable, to mount under any path of another ASGI app (``mount.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .tokens import TokenTable

if TYPE_CHECKING:
    from .mount import MountedService


def asgi(queues: Iterable[str], url: str | None = None, tokens: TokenTable | str | None = None,
         *, dispatch: bool = True, session_secret: str | None = None,
         secure_cookies: bool = False, **options: Any) -> MountedService:
    """The HTTP service and dashboard of ``queues`` as an ASGI app to mount under any path of a
    FastAPI, Starlette or Litestar app (docs/integrations.md#mounting-the-dashboard).

    ``url``: the Redis URL (default ``STREAMDELAY_URL``, else ``redis://localhost:6379/0``);
    ``tokens``: a ``TokenTable`` or ``name:token:scopes;...`` text (none: loopback clients
    only, as ``streamdelay serve``); ``dispatch``: promote and reclaim as ``serve`` does (off
    when the app's workers dispatch); ``options``: other ``ServeSettings`` fields
    (``max_polls``, ``queue_options``, ...). Starts with the host's lifespan
    (``service.lifespan``) or on the first request."""
    from ..io.config import resolve_url
    from .app import create_app
    from .mount import MountedService
    from .serve_settings import ServeSettings
    from .serve_settings import session_secret as secret_of
    from .tokens import parse_tokens

    table = (tokens if isinstance(tokens, TokenTable) else
             parse_tokens(tokens, "tokens") if tokens else TokenTable())
    settings = ServeSettings(url=resolve_url(url), queues=tuple(queues), tokens=table,
                             dispatch=dispatch, session_secret=secret_of(session_secret),
                             secure_cookies=secure_cookies, **options)
    return MountedService(create_app(settings))
