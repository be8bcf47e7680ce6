"""streamdelay as a backend of Django's task framework (``django.tasks`` on Django >= 6.0, the
``django-tasks`` backport before it): docs/integrations.md#django.

Add ``"streamdelay.contrib.django"`` to ``INSTALLED_APPS`` (for ``manage.py
streamdelay_worker``) and name ``streamdelay.contrib.django.StreamdelayBackend`` in ``TASKS``.
Importing this package imports no Django module: the backend class loads on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["StreamdelayBackend"]


def __getattr__(name: str) -> Any:
    """``StreamdelayBackend``, imported when Django's settings name it."""
    if name == "StreamdelayBackend":
        from .backend import StreamdelayBackend

        return StreamdelayBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
