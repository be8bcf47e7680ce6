"""The HTTP service and the dashboard of ``streamdelay serve`` (docs/http.md, docs/dashboard.md)."""
