"""Retry delays after a failed attempt (pure)."""

from __future__ import annotations

import random

from ..base.models import Backoff, BackoffPolicy
from ..base.validation import MAX_DELAY_SECONDS, delay_ms


def retry_delay(policy: BackoffPolicy, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before the next delivery after failed delivery number ``attempt`` (1-based).

    ``Backoff``: ``base * 2**(attempt-1)`` capped at ``cap``, with full jitter (uniform in
    ``[0, that]``) unless ``jitter`` is False. A list: its entry for this attempt, the last entry
    repeating. Never negative, never above the longest delay a job may have (about ten years):
    a larger ``cap`` or schedule entry waits that long instead of failing to settle.
    """
    step = max(attempt, 1)
    if isinstance(policy, Backoff):
        ceiling = max(0.0, min(policy.cap, MAX_DELAY_SECONDS,
                               policy.base * (2.0 ** min(step - 1, 64))))
        if not policy.jitter:
            return ceiling
        return (rng or random).uniform(0.0, ceiling)
    schedule = list(policy) or [0.0]
    return min(MAX_DELAY_SECONDS, max(0.0, float(schedule[min(step, len(schedule)) - 1])))


def failure_delay_ms(policy: BackoffPolicy, attempt: int) -> int:
    """``retry_delay`` in whole milliseconds (rounded up), as ``failJob`` takes it."""
    return delay_ms(retry_delay(policy, attempt))
