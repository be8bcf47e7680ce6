"""Prometheus support shared by the worker's own metrics (``worker_metrics.py``, on
``metrics_port``) and the queue-level exporter (``streamdelay exporter``, ``metrics/``), extra
``streamdelay[metrics]``; docs/operations.md.

Importing this module does not import ``prometheus_client``: a worker without ``metrics_port``
never needs it.
"""

from __future__ import annotations

from types import ModuleType

from ..base.errors import ConfigError
from .lateness import LATENESS_BUCKETS  # shared with the dashboard's record

HANDLER_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0, 60.0, 120.0, 300.0)
OUTCOMES = ("handled", "retried", "dead", "dropped", "reclaimed", "released")
STATES = ("delayed", "ready", "reserved", "dead")
__all__ = ["HANDLER_BUCKETS", "LATENESS_BUCKETS", "OUTCOMES", "STATES", "port", "prometheus"]


def prometheus(field: str) -> ModuleType:
    """The ``prometheus_client`` module, or a ConfigError naming ``field`` and the extra."""
    try:
        import prometheus_client
    except ImportError as exc:
        raise ConfigError(f"{field}: metrics need prometheus_client: pip install "
                          f"'streamdelay[metrics]'", field=field) from exc
    return prometheus_client


def port(value: object, field: str) -> int:
    """A TCP port to listen on (0: any free port)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigError(f"{field}: {value!r} is not a port (0-65535)", field=field)
    return value
