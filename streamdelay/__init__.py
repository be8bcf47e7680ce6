"""streamdelay: delayed jobs on Redis Streams, on time by the server clock, at-least-once."""

from .dispatcher import Dispatcher
from .errors import (
    BodyDecodeError,
    BodyEncodeError,
    ConfigError,
    ConnectionFailed,
    GroupNotFound,
    JobNotFound,
    NoSuchQueue,
    PartialEnqueueError,
    ScriptError,
    StreamdelayError,
    ValidationError,
)
from .inspect.listing import JobPage
from .models import (
    Backoff,
    ClaimResult,
    DeadJob,
    Drop,
    EnqueueResult,
    Job,
    JobInfo,
    JobSpec,
    QueueStats,
    Retry,
    TopicStats,
)
from .queue import AsyncQueue, Queue
from .worker import Worker

__version__ = "0.1.0"

__all__ = [
    "AsyncQueue",
    "Backoff",
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
    "JobInfo",
    "JobNotFound",
    "JobPage",
    "JobSpec",
    "NoSuchQueue",
    "PartialEnqueueError",
    "Queue",
    "QueueStats",
    "Retry",
    "ScriptError",
    "StreamdelayError",
    "TopicStats",
    "ValidationError",
    "Worker",
    "__version__",
]
