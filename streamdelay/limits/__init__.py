"""Rate and concurrency limits per topic across all workers (docs/limits.md).

Pure parts (rate parsing and validation, the stored form) and the plans every face drives:
setting a limit, reading the limits, and the one take-with-limit call (``takeLimited``) that a
worker's read loop and any other taker share.
"""

from .limit_plans import (
    TakeReply,
    limits_plan,
    parse_take,
    set_limit_plan,
    take_call,
)
from .rates import Rate, TopicLimit, parse_rate

__all__ = ["Rate", "TakeReply", "TopicLimit", "limits_plan", "parse_rate", "parse_take",
           "set_limit_plan", "take_call"]
