"""The night schedule: when the replica floor (and, where configured, the ceiling) drops to a fraction.

Pure. The night is a daily window ``[start, end)`` in an IANA timezone; it may cross midnight (the usual
22:00-06:00). :func:`replica_bounds` says, for any instant, the bounds the ScaledObject enforces, so a
test can check a night and a day instant against what KEDA will do (inference_platform.components.autoscaling.scaled_object).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, time

from inference_platform.catalog import time_zones

DEFAULT_TIMEZONE = "UTC"
DEFAULT_NIGHT_START = time(22, 0)
DEFAULT_NIGHT_END = time(6, 0)
"""The day floor returns at 06:00, before a typical morning ramp; scale-up then takes a model load."""
DEFAULT_NIGHT_FRACTION = 0.5
"""The reference design: scale down to about 50% at night."""


@dataclass(frozen=True, kw_only=True)
class NightSchedule:
    """When the replica floor (and, where set, the ceiling) drops to a fraction: the window and its timezone."""

    timezone: str = DEFAULT_TIMEZONE
    """Default ``UTC``. IANA timezone the window is read in (``Europe/Paris``); daylight saving applies."""
    start: time = DEFAULT_NIGHT_START
    """Default 22:00. The night floor applies from here."""
    end: time = DEFAULT_NIGHT_END
    """Default 06:00. The day floor returns here; put it ahead of the morning ramp by a model load."""
    fraction: float = DEFAULT_NIGHT_FRACTION
    """Default 0.5, in (0, 1]. Night bounds = ceil(day bounds x fraction)."""
    lower_ceiling: bool = True
    """Default ``true``: the ceiling drops at night too, not only the floor."""
    keep_at_least: int = 0
    """Default 0. The night never goes below this many replicas (nor above the day value): production
    keeps 2 for availability."""

    def problems(self) -> list[tuple[str, str]]:
        """(field, message) pairs; empty when the schedule is usable."""
        out = []
        # The IANA list of the tzdata package, not the planning machine's /usr/share/zoneinfo (where
        # "localtime" is a file): inference_platform.catalog.time_zones.
        if not time_zones.is_zone(self.timezone):
            out.append(
                (
                    "timezone",
                    f"got {self.timezone!r}; expected an IANA timezone such as UTC or Europe/Paris "
                    f"(tzdata {time_zones.IANA_VERSION})",
                )
            )
        if self.keep_at_least < 0:
            out.append(("keep_at_least", f"got {self.keep_at_least}; expected 0 or more"))
        if not 0 < self.fraction <= 1:
            out.append(("fraction", f"got {self.fraction}; expected a fraction in (0, 1]"))
        if self.start == self.end:
            out.append(("start", f"start {self.start:%H:%M} equals end: the night would be empty or the whole day"))
        return out

    def is_night(self, instant: datetime) -> bool:
        if instant.tzinfo is None:
            raise ValueError("instant must be timezone-aware")
        local = instant.astimezone(time_zones.zone(self.timezone)).time()
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end

    def night_value(self, day: int) -> int:
        """A day bound scaled for the night; never 0 when the day has replicas (service stays up)."""
        scaled = math.ceil(day * self.fraction) if day > 0 else 0
        return max(scaled, min(day, self.keep_at_least))

    @property
    def day_cron(self) -> tuple[str, str]:
        """(start, end) cron expressions of the DAY window (KEDA's cron trigger is active in between)."""
        return _cron(self.end), _cron(self.start)


@dataclass(frozen=True)
class ReplicaBounds:
    """A replica floor and ceiling, by day or by night."""

    floor: int
    ceiling: int


def replica_bounds(
    min_replicas: int, max_replicas: int, schedule: NightSchedule | None, instant: datetime
) -> ReplicaBounds:
    """The replica floor and ceiling in force at ``instant`` (day bounds when there is no schedule)."""
    if schedule is None or not schedule.is_night(instant):
        return ReplicaBounds(min_replicas, max_replicas)
    floor = schedule.night_value(min_replicas)
    ceiling = schedule.night_value(max_replicas) if schedule.lower_ceiling else max_replicas
    return ReplicaBounds(floor, max(floor, ceiling))


def _cron(at: time) -> str:
    return f"{at.minute} {at.hour} * * *"
