"""streamdelay: delayed jobs on Redis Streams, on time by the server clock, at-least-once."""

from .base.errors import (
    BodyDecodeError,
    BodyEncodeError,
    ConfigError,
    ConnectionFailed,
    GroupNotFound,
    JobNotFound,
    ScriptError,
    StreamdelayError,
    ValidationError,
)
from .base.models import (
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
from .consumer.dispatcher import Dispatcher
from .consumer.worker import Worker
from .producer.queue import AsyncQueue, Queue

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
    "JobSpec",
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
