"""streamdelay: delayed jobs on Redis Streams, on time by the server clock, at-least-once.

The package is layered (the import-linter contract in pyproject.toml, checked by ``make lint``;
docs/design.md), top to bottom: ``testing`` | ``contrib`` > ``cli`` > ``web`` > ``metrics`` >
``client`` > ``consume`` > ``dispatch`` | ``limits`` > ``telemetry`` > ``io`` > ``protocol`` >
``base``: a layer imports only the layers below it
(tests/unit/test_package_layers.py keeps this list and the contract's alike). Everything a user
needs is exported here.
"""

import importlib as _importlib
import sys as _sys
import types as _types

from .base import masking as _masking
from .base.control import Snooze
from .base.errors import (
    Aborted,
    BodyDecodeError,
    BodyEncodeError,
    ConfigError,
    ConnectionFailed,
    GroupNotFound,
    JobNotFound,
    LayoutError,
    NoSuchQueue,
    NotDurable,
    PartialEnqueueError,
    ResultTimeout,
    ScriptError,
    StaleReceipt,
    StreamdelayError,
    ValidationError,
    WorkerNotFound,
)
from .base.events import JobEvent
from .base.fleet import DeadRetention, WorkerInfo
from .base.flows import BatchInfo
from .base.models import (
    Backoff,
    ClaimResult,
    DeadJob,
    Drop,
    EnqueueResult,
    Job,
    JobInfo,
    JobResult,
    JobSpec,
    QueueStats,
    Retry,
    TopicStats,
)
from .base.tasks import Task, task
from .client.listing import JobPage
from .client.queue import AsyncQueue, Queue
from .client.typed import AsyncEnqueued, Enqueued
from .consume.lifespan import lifespan
from .consume.reservation import AsyncReservation, Reservation
from .consume.worker import Worker
from .dispatch.dispatcher import Dispatcher
from .dispatch.schedule_plans import ScheduleNotFound
from .dispatch.schedule_spec import Schedule
from .io import config as _config
from .limits.rates import Rate, TopicLimit
from .protocol import scripts as _scripts

__version__ = "0.1.0"

# Module paths the docs name stay importable: ``streamdelay.scripts`` (docs/keys.md, assembling a
# script from another language), ``streamdelay.masking`` and ``streamdelay.config`` (mask_url,
# docs/security.md).
for _name, _module in (("scripts", _scripts), ("masking", _masking), ("config", _config)):
    _sys.modules.setdefault(f"{__name__}.{_name}", _module)
    globals()[_name] = _module



def __getattr__(name: str) -> _types.ModuleType:
    """``sd.testing``, the testing kit (docs/testing.md), imported on first use only."""
    if name == "testing":
        return _importlib.import_module(f"{__name__}.testing")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Aborted",
    "AsyncEnqueued",
    "AsyncQueue",
    "AsyncReservation",
    "Backoff",
    "BatchInfo",
    "BodyDecodeError",
    "BodyEncodeError",
    "ClaimResult",
    "ConfigError",
    "ConnectionFailed",
    "DeadJob",
    "DeadRetention",
    "Dispatcher",
    "Drop",
    "EnqueueResult",
    "Enqueued",
    "GroupNotFound",
    "Job",
    "JobEvent",
    "JobInfo",
    "JobNotFound",
    "JobPage",
    "JobResult",
    "JobSpec",
    "LayoutError",
    "NoSuchQueue",
    "NotDurable",
    "PartialEnqueueError",
    "Queue",
    "QueueStats",
    "Rate",
    "Reservation",
    "ResultTimeout",
    "Retry",
    "Schedule",
    "ScheduleNotFound",
    "ScriptError",
    "Snooze",
    "StaleReceipt",
    "StreamdelayError",
    "Task",
    "TopicLimit",
    "TopicStats",
    "ValidationError",
    "Worker",
    "WorkerInfo",
    "WorkerNotFound",
    "__version__",
    "lifespan",
    "task",
]
