"""The process executor: handlers run in child processes, one job at a time each, with hard
limits (docs/worker.md#executors). ``settings`` checks the options, ``pool`` is the worker's
side, ``child`` the children's, ``wire`` the msgspec frames between them, ``outcomes`` what an
answer means.
"""

from .child_outcomes import ChildDied
from .executor_settings import ProcessSettings, executor_settings
from .pool import ProcessPool

__all__ = ["ChildDied", "ProcessPool", "ProcessSettings", "executor_settings"]
