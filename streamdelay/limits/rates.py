"""Rates (``"100/s"``) and the stored form of a topic's limit; pure, no I/O (docs/limits.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import ValidationError

MAX_COUNT = 1_000_000
MAX_PERIOD_MS = 86_400_000
MAX_CONCURRENCY = 100_000
_RATE = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*(ms|s|m|h)\s*")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


@dataclass(frozen=True)
class Rate:
    """At most ``count`` job starts per ``per_ms`` milliseconds (a token bucket holding
    ``count`` tokens, refilled continuously)."""

    count: int
    per_ms: int

    def __str__(self) -> str:
        for unit in ("h", "m", "s"):
            size = _UNIT_MS[unit]
            if self.per_ms % size == 0:
                n = self.per_ms // size
                return f"{self.count}/{'' if n == 1 else n}{unit}"
        return f"{self.count}/{self.per_ms}ms"

    @property
    def per_second(self) -> float:
        """The steady rate in jobs per second."""
        return self.count * 1000.0 / self.per_ms


def parse_rate(value: Any, field: str = "rate") -> Rate:
    """``"100/s"``, ``"5/m"``, ``"1/h"``, ``"10/500ms"``, ``"3/2s"`` (or a ``Rate``) as a
    ``Rate``; anything else raises ``ValidationError`` naming ``field``."""
    if isinstance(value, Rate):
        return _checked(value.count, value.per_ms, field)
    if not isinstance(value, str):
        raise ValidationError(f"{field}: must be a str like '100/s', not {type(value).__name__}",
                              field=field)
    match = _RATE.fullmatch(value)
    if not match:
        raise ValidationError(f"{field}: {value[:40]!r} is not a rate; write COUNT/PERIOD, e.g. "
                              f"'100/s', '5/m', '1/h', '10/500ms'", field=field)
    per = float(match.group(2) or 1) * _UNIT_MS[match.group(3)]
    if per != int(per):
        raise ValidationError(f"{field}: the period of {value!r} is not a whole number of ms",
                              field=field)
    return _checked(int(match.group(1)), int(per), field)


def _checked(count: int, per_ms: int, field: str) -> Rate:
    if not 1 <= count <= MAX_COUNT:
        raise ValidationError(f"{field}: the count must be in [1, {MAX_COUNT}]", field=field)
    if not 1 <= per_ms <= MAX_PERIOD_MS:
        raise ValidationError(f"{field}: the period must be between 1ms and 24h", field=field)
    return Rate(count, per_ms)


def concurrency(value: Any, field: str = "concurrency") -> int:
    """A concurrency limit: an int in [1, 100000]."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        raise ValidationError(f"{field}: must be an int in [1, {MAX_CONCURRENCY}]", field=field)
    return value


@dataclass(frozen=True)
class TopicLimit:
    """The limit of one topic: a rate, a concurrency, or both (None: not limited so), and the
    limit each of its fairness keys is held to (``key_rate``, ``key_concurrency``:
    docs/limits.md#key-limits)."""

    rate: Rate | None = None
    concurrency: int | None = None
    key_rate: Rate | None = None
    key_concurrency: int | None = None

    def stored(self) -> tuple[str, str, str]:
        """The ``setLimit`` arguments: count, period ms, concurrency ('' where not limited)."""
        rate = self.rate
        return ("" if rate is None else str(rate.count), "" if rate is None else str(rate.per_ms),
                "" if self.concurrency is None else str(self.concurrency))

    def key_stored(self) -> tuple[str, str, str]:
        """The ``setKeyLimit`` arguments: key rate count, period ms, key concurrency."""
        rate = self.key_rate
        return ("" if rate is None else str(rate.count), "" if rate is None else str(rate.per_ms),
                "" if self.key_concurrency is None else str(self.key_concurrency))

    def with_keys(self, raw: str) -> TopicLimit:
        """This limit with the key limit of its stored form ``count|per_ms|concurrency``."""
        keys = TopicLimit.from_stored(raw)
        return TopicLimit(self.rate, self.concurrency, keys.rate, keys.concurrency)

    @classmethod
    def from_stored(cls, raw: str) -> TopicLimit:
        """The limit from its stored form ``count|per_ms|concurrency``."""
        count, _, rest = raw.partition("|")
        per, _, conc = rest.partition("|")
        rate = Rate(int(count), int(per)) if count and per else None
        return cls(rate, int(conc) if conc else None)

    def __str__(self) -> str:
        parts = ([f"rate {self.rate}"] if self.rate else []) + (
            [f"concurrency {self.concurrency}"] if self.concurrency else []) + (
            [f"key rate {self.key_rate}"] if self.key_rate else []) + (
            [f"key concurrency {self.key_concurrency}"] if self.key_concurrency else [])
        return ", ".join(parts) or "no limit"
