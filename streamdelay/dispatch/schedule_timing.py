"""When a schedule ticks: pure evaluation of ``cron=`` (cronsim, zoneinfo) and ``every=``.

Every function takes and returns epoch milliseconds; none reads a clock (the callers pass the
Redis server time). The DST rules are cronsim's, which are Debian cron's, and are written down
in docs/schedules.md#daylight-saving-time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from ..base.errors import ValidationError

# a cron expression that matches nothing for this long is refused (e.g. "0 0 30 2 *" never ticks)
HORIZON_MS = 5 * 366 * 86_400_000


def _tz(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ValueError, KeyError, OSError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ValidationError(f"tz: unknown time zone {tz!r}", field="tz") from exc


class Timing:
    """The ticks of one schedule: ``cron`` in time zone ``tz``, or every ``every_ms``.

    ``every`` ticks are anchored at the Unix epoch (multiples of the interval), so they never
    drift whatever the dispatcher's lateness; ``tz`` does not move them.
    """

    def __init__(self, cron: str | None, every_ms: int | None, tz: str) -> None:
        self.cron = cron
        self.every_ms = every_ms
        self.zone = _tz(tz)
        if cron is not None:
            try:
                CronSim(cron, datetime(2000, 1, 1, tzinfo=self.zone))  # parses and checks
            except CronSimError as exc:
                raise ValidationError(f"cron: {exc} in {cron!r}", field="cron") from exc

    def _cron(self, after_ms: int, reverse: bool = False) -> Iterator[int]:
        assert self.cron is not None
        start = datetime.fromtimestamp(after_ms / 1000, timezone.utc).astimezone(self.zone)
        for dt in CronSim(self.cron, start, reverse=reverse):
            yield int(dt.timestamp()) * 1000

    def next_after(self, after_ms: int) -> int:
        """The first tick strictly after ``after_ms`` (-1: none within five years)."""
        if self.every_ms is not None:
            return (after_ms // self.every_ms + 1) * self.every_ms
        for tick in self._cron(after_ms):
            # cronsim walks local wall time: around a fall-back hour it can yield a wall time
            # that is already past as an instant; those are skipped here
            if tick > after_ms + HORIZON_MS:
                break
            if tick > after_ms:
                return tick
        return -1

    def last_before(self, before_ms: int, count: int, floor_ms: int) -> list[int]:
        """Up to ``count`` ticks in ``[floor_ms, before_ms)``, the latest ones, in order."""
        found: list[int] = []
        if count <= 0 or before_ms <= floor_ms:
            return found
        if self.every_ms is not None:
            tick = (before_ms - 1) // self.every_ms * self.every_ms
            while tick >= floor_ms and len(found) < count:
                found.append(tick)
                tick -= self.every_ms
        else:
            for tick in self._cron(before_ms, reverse=True):
                if tick < floor_ms or len(found) >= count:
                    break
                if tick < before_ms and tick not in found:
                    found.append(tick)
        found.reverse()
        return found

    def upcoming(self, start_ms: int, count: int) -> list[int]:
        """The first ``count`` ticks at or after ``start_ms``."""
        out: list[int] = []
        tick = self.next_after(start_ms - 1)
        while tick >= 0 and len(out) < count:
            out.append(tick)
            tick = self.next_after(tick)
        return out
