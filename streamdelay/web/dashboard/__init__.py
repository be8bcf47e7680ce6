"""The dashboard at ``/``: server-rendered pages, live without a reload (docs/dashboard.md)."""
