"""Result: one decision, with its times in seconds and as timedelta."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

#: The retry_after of events that can never be admitted: more than a
#: limit's maximum at once.
NEVER = -1.0


@dataclass(frozen=True)
class Result:
    """One decision of a limiter."""

    #: Every limit admits the events.
    allowed: bool
    #: How many more events would be admitted right now.
    remaining: int
    #: 0 when allowed; otherwise the wait in seconds after which the same
    #: number of events would be admitted if nothing else happens, or NEVER.
    retry_after: float
    #: The time in seconds until the limiter's state is fresh again.
    reset_after: float
    #: The 0-based index of the limit that decided: when allowed the one with
    #: the fewest remaining, when denied the one with the longest wait; -1
    #: after a reset or without an answer.
    limit: int
    #: Under fail_open, the UnavailableError of a call admitted without an
    #: answer; otherwise None.
    error: Optional[Exception] = None
    #: retry_after and reset_after in microseconds (-1: never), exact.
    retry_after_us: int = 0
    reset_after_us: int = 0

    @property
    def never(self) -> bool:
        """True when the events can never be admitted (retry_after NEVER)."""
        return self.retry_after_us < 0

    @property
    def retry_after_timedelta(self) -> Optional[timedelta]:
        """retry_after as a timedelta; None when never."""
        return None if self.retry_after_us < 0 else timedelta(microseconds=self.retry_after_us)

    @property
    def reset_after_timedelta(self) -> Optional[timedelta]:
        """reset_after as a timedelta; None when never."""
        return None if self.reset_after_us < 0 else timedelta(microseconds=self.reset_after_us)


def _seconds(us: int) -> float:
    return NEVER if us < 0 else us / 1_000_000


def result_of(reply, unit_us: int, script: str) -> Result:
    """Decode a script's reply, five integers, in a unit of unit_us µs."""
    from .errors import ScriptError

    if not isinstance(reply, (list, tuple)) or len(reply) != 5 or not all(isinstance(v, int) for v in reply):
        raise ScriptError(script, f"a reply of five integers expected, got {reply!r:.200}")
    allowed, remaining, retry, reset, index = reply
    retry_us = -1 if retry < 0 else retry * unit_us
    reset_us = -1 if reset < 0 else reset * unit_us
    return Result(allowed == 1, remaining, _seconds(retry_us), _seconds(reset_us), index - 1,
                  retry_after_us=retry_us, reset_after_us=reset_us)


def open_result(error: Exception) -> Result:
    """The Result of a call admitted without an answer (fail-open)."""
    return Result(True, 0, 0.0, 0.0, -1, error=error)
