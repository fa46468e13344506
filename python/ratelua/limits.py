"""The limits of each script, their checks and their arguments, exactly as
the Go API renders them (so that both build the same state keys)."""

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import List, Optional, Sequence, Tuple, Union

from .errors import LimitError

Duration = Union[timedelta, int, float]

#: Bound of now, durations and replies in the scripts: 2^52.
MAX_SCRIPT_INT = 1 << 52
#: The most limits one call takes.
MAX_LIMITS = 16

_UNITS = {"ms": 1_000, "us": 1}


#: The longest duration in seconds a limit may name: 2^52 ms (the bound in
#: milliseconds, the coarsest unit the limiters send).
MAX_SECONDS = MAX_SCRIPT_INT // 1000


def micros(d: Duration, field: str = "duration") -> int:
    """d in whole microseconds: a timedelta, or seconds as an int or float
    (rounded to the microsecond). Anything else, NaN, an infinity, a
    duration past 2^52 ms or below the 1 µs resolution floor is a
    LimitError naming field."""
    if isinstance(d, timedelta):
        us = d // timedelta(microseconds=1)
        shown = str(d)
    elif isinstance(d, bool) or not isinstance(d, (int, float)):
        raise LimitError(-1, field, f"must be a datetime.timedelta or a number of seconds, got {type(d).__name__} {d!r}")
    elif isinstance(d, float) and not math.isfinite(d):
        raise LimitError(-1, field, f"must be a finite number of seconds, got {d!r}")
    elif abs(d) > MAX_SECONDS:
        raise LimitError(-1, field, f"must be at most 2^52 ms ({MAX_SECONDS} s), got {d!r} s")
    else:
        us = timedelta(seconds=d) // timedelta(microseconds=1)
        shown = f"{d!r} s"
    if us == 0 and d:
        raise LimitError(-1, field, f"is below the resolution floor of 1 µs, got {shown}")
    return us


def pick_unit(durations_us: Sequence[int]) -> str:
    """Milliseconds, or microseconds when a duration is not a whole number of
    milliseconds (as the Go API picks)."""
    return "ms" if all(d % 1000 == 0 for d in durations_us) else "us"


class _Check:
    """The validation of one limit's fields; the first failure wins."""

    def __init__(self, index: int, unit: str):
        self.index, self.unit, self.error = index, unit, None

    def fail(self, field: str, reason: str) -> None:
        if self.error is None:
            self.error = LimitError(self.index, field, reason)

    def count(self, field: str, v: int, lo: int, hi: int) -> str:
        if not isinstance(v, int) or isinstance(v, bool):
            self.fail(field, f"must be an integer, got {v!r}")
            return "0"
        if v < lo or v > hi:
            self.fail(field, f"must be in [{lo}, {hi}], got {v}")
        return str(v)

    def duration(self, field: str, us: int) -> str:
        n = us // _UNITS[self.unit]
        if us <= 0 or n > MAX_SCRIPT_INT:
            self.fail(field, f"must be positive and at most 2^52 {self.unit}, got {_show(us)}")
        return str(n)


def _show(us: int) -> str:
    return f"{us / 1_000_000:g}s"


@dataclass(frozen=True)
class Window:
    """At most max events in any duration, counted in buckets of resolution
    (sliding_window). resolution None means a tenth of duration."""

    max: int
    duration: Duration
    resolution: Optional[Duration] = None

    def _durations(self) -> List[int]:
        d = micros(self.duration, "Duration")
        r = d // 10 if self.resolution is None else micros(self.resolution, "Resolution")
        return [d, r]

    def _args(self, c: _Check) -> List[str]:
        d, r = self._durations()
        args = [c.count("Max", self.max, 1, 10**9), c.duration("Duration", d), c.duration("Resolution", r)]
        if c.error is None and r > d:
            c.fail("Resolution", f"must be at most Duration, got {_show(r)} > {_show(d)}")
        if c.error is None and -(-d // r) > 10000:
            c.fail("Resolution", f"makes more than 10000 buckets in {_show(d)}")
        return args

    def _quota(self) -> Tuple[int, int]:
        return self.max, self._durations()[0]


@dataclass(frozen=True)
class Bucket:
    """Up to capacity tokens, refilled by refill_amount every refill_interval,
    continuously (token_bucket). A new bucket is full."""

    capacity: int
    refill_amount: int
    refill_interval: Duration

    def _durations(self) -> List[int]:
        return [micros(self.refill_interval, "RefillInterval")]

    def _args(self, c: _Check) -> List[str]:
        (i,) = self._durations()
        args = [c.count("Capacity", self.capacity, 1, 10**9), c.count("RefillAmount", self.refill_amount, 1, 10**9),
                c.duration("RefillInterval", i)]
        if c.error is None and self.capacity * (i // _UNITS[c.unit]) > 1 << 50:
            c.fail("RefillInterval", f"times Capacity must be at most 2^50 {c.unit}, got {self.capacity} * {_show(i)}")
        return args

    def _quota(self) -> Tuple[int, int]:
        # The time the bucket takes to fill from empty.
        (i,) = self._durations()
        return self.capacity, math.ceil(i * self.capacity / max(self.refill_amount, 1))


@dataclass(frozen=True)
class Log:
    """At most max events in any window, exactly (zset_log)."""

    max: int
    window: Duration

    def _durations(self) -> List[int]:
        return [micros(self.window, "Window")]

    def _args(self, c: _Check) -> List[str]:
        return [c.count("Max", self.max, 1, 10**4), c.duration("Window", self._durations()[0])]

    def _quota(self) -> Tuple[int, int]:
        return self.max, self._durations()[0]


@dataclass(frozen=True)
class Decay:
    """An exponentially decaying count (ar1): at every multiple of resolution
    the count is divided by factor (> 1, at most three decimals)."""

    max: int
    factor: float
    resolution: Duration

    def _durations(self) -> List[int]:
        return [micros(self.resolution, "Resolution")]

    def _args(self, c: _Check) -> List[str]:
        f = self.factor
        if isinstance(f, bool) or not isinstance(f, (int, float)):
            c.fail("Factor", f"must be a number, got {type(f).__name__} {f!r}")
            f = float("nan")
        permille = math.floor(f * 1000 + 0.5) if math.isfinite(f) else 0
        if not math.isfinite(f) or permille < 1001 or permille > 1e9 or abs(f * 1000 - permille) > 1e-6:
            c.fail("Factor", f"must be in [1.001, 10^6] with at most 3 decimals, got {self.factor!r}")
            permille = 0
        return [c.count("Max", self.max, 1, 10**9), str(int(permille)), c.duration("Resolution", self._durations()[0])]

    def _quota(self) -> Tuple[int, int]:
        (r,) = self._durations()
        return self.max, math.ceil(r * self.factor / (self.factor - 1))


@dataclass(frozen=True)
class Slots:
    """At most max slots held at once (concurrency), each by a lease that
    expires lease after its acquire or last renewal unless renewed."""

    max: int
    lease: Duration

    def _durations(self) -> List[int]:
        return [micros(self.lease, "Lease")]

    def _args(self, c: _Check) -> List[str]:
        return [c.count("Max", self.max, 1, 10**6), c.duration("Lease", self._durations()[0])]

    def _quota(self) -> Tuple[int, int]:
        return self.max, self._durations()[0]


def render(limits: Sequence, kind: type) -> Tuple[str, List[str], List[Tuple[int, int]]]:
    """The unit, the limit arguments and the quotas (max, window in µs) of
    limits, all of type kind; raises LimitError like the Go API."""
    if not 1 <= len(limits) <= MAX_LIMITS:
        raise LimitError(-1, "limits", f"must be 1 to {MAX_LIMITS}, got {len(limits)}")
    for i, l in enumerate(limits):
        if not isinstance(l, kind):
            raise LimitError(i, kind.__name__, f"expected a ratelua.{kind.__name__}, got {type(l).__name__}")
    durations = []
    for i, l in enumerate(limits):
        try:
            durations.extend(l._durations())
        except LimitError as e:  # micros names the field, not the limit
            raise LimitError(i, e.field, e.reason) from None
    unit = pick_unit(durations)
    args: List[str] = []
    for i, l in enumerate(limits):
        c = _Check(i, unit)
        rendered = l._args(c)
        if c.error is not None:
            raise c.error
        args.extend(rendered)
    return unit, args, [l._quota() for l in limits]
