"""Pure figures shared by the benchmarks and the peers harness: standard library only.

The peers harness (``benchmarks/peers/workload.py``) runs in ``.bench-venv``, which has the peer
libraries and no streamdelay, so it cannot import ``benchmarks.core.harness``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (nearest rank) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[rank - 1]
