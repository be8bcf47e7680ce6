"""The Django app of the integration: it brings ``manage.py streamdelay_worker``."""

from __future__ import annotations

from django.apps import AppConfig


class StreamdelayConfig(AppConfig):  # type: ignore[misc]
    """``INSTALLED_APPS = [..., "streamdelay.contrib.django"]``."""

    name = "streamdelay.contrib.django"
    label = "streamdelay"
    verbose_name = "streamdelay"
