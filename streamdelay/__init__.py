"""streamdelay: delayed jobs on Redis Streams, on time by the server clock, at-least-once.

The package is layered (docs/design.md): ``base`` < ``protocol`` < ``redis_io`` < ``producer``
< ``consumer`` < ``cli``; everything a user needs is exported here.
"""

import sys as _sys

from .base import masking as _masking
from .base.errors import (
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
)
from .base.events import JobEvent
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
from .consumer.dispatcher import Dispatcher
from .consumer.worker import Worker
from .limits.rates import Rate, TopicLimit
from .producer.listing import JobPage
from .producer.pull import AsyncReservation, Reservation
from .producer.queue import AsyncQueue, Queue
from .protocol import scripts as _scripts
from .redis_io import config as _config
from .schedules.plans import ScheduleNotFound
from .schedules.spec import Schedule

__version__ = "0.1.0"

# Module paths the docs name stay importable: ``streamdelay.scripts`` (docs/keys.md, assembling a
# script from another language), ``streamdelay.masking`` and ``streamdelay.config`` (mask_url,
# docs/security.md).
for _name, _module in (("scripts", _scripts), ("masking", _masking), ("config", _config)):
    _sys.modules.setdefault(f"{__name__}.{_name}", _module)
    globals()[_name] = _module

__all__ = [
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
    "Dispatcher",
    "Drop",
    "EnqueueResult",
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
    "StaleReceipt",
    "StreamdelayError",
    "TopicLimit",
    "TopicStats",
    "ValidationError",
    "Worker",
    "__version__",
]
