"""The dashboard after the demo: ``streamdelay demo --dashboard`` / ``make demo-dashboard``
(docs/dashboard.md) serves the demo queue's dashboard until Ctrl-C."""

from __future__ import annotations

from typing import TextIO

DASHBOARD_HINT = ("  dashboard `make demo-dashboard` (`streamdelay demo --dashboard`) runs this "
                  "demo, then shows its queue\n            at http://127.0.0.1:8080/ until Ctrl-C "
                  "(docs/dashboard.md)")


def serve_dashboard(url: str, name: str, port: int, out: TextIO) -> None:
    """Serve queue ``name``'s dashboard on loopback until SIGINT/SIGTERM (no token: loopback
    only, as ``streamdelay serve`` does); the demo's Redis stays up meanwhile."""
    try:
        import uvicorn

        from ..web.serve_settings import ServeSettings
        from ..web.server import run_server
    except ImportError as exc:
        print(f"  dashboard needs the web extra: pip install 'streamdelay[web]' ({exc.name} is "
              f"missing)", file=out)
        return
    print(f"\n  dashboard http://127.0.0.1:{port}/ shows queue {name}; Ctrl-C stops it",
          file=out, flush=True)
    run_server(uvicorn, ServeSettings(url=url, queues=(name,), port=port), 2.0)
