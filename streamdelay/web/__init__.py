"""The HTTP service of ``streamdelay serve`` (extra ``streamdelay[web]``): the JSON API of
docs/http.md, the dashboard (docs/dashboard.md), ``/metrics`` and ``/healthz``.

Importing this package does not import Litestar: ``settings`` and ``tokens`` are plain Python,
so the CLI can check its options (and say which extra is missing) before the stack is loaded.
``app.create_app(settings)`` builds the ASGI application.
"""
