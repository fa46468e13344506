"""The limiters over a synchronous redis-py client (redis.Redis or
redis.cluster.RedisCluster)."""

from typing import Optional

from .core import Spec, limiter_classes
from .errors import UnavailableError
from .keys import EventKey
from .reservation import ReservationState, Settlement
from .result import Result
from .scripts import library_source


class Limiter(Spec):
    """Decides events against a set of limits with one script. Construct one
    of SlidingWindow, TokenBucket, ZSetLog or AR1.

    Options (keywords): prefix ("ratelua"), count_denied (record denied
    attempts too), clock (a callable returning a datetime: the caller's
    clock; None: the server's), fail_open (admit a call that got no answer,
    with the error in Result.error; any answer of the server, an error reply
    included, is never admitted), functions (FCALL the release's library
    instead of EVALSHA), version (the script version: None is the newest,
    5 pins the one of release 0.1.0; the same state keys as Go's
    Options.Version).

    Durations are datetime.timedelta or seconds (int or float, rounded to
    the microsecond). The client is a synchronous redis-py client; an
    asyncio one is refused (use ratelua.aio)."""

    def allow(self, event_key: EventKey) -> Result:
        """Record one event for event_key and decide it."""
        return self.allow_n(event_key, 1)

    def allow_n(self, event_key: EventKey, n: int) -> Result:
        """Record n events (n >= 1) for event_key and decide them together."""
        self.check_n(n)
        return self._call(event_key, n)

    def peek(self, event_key: EventKey) -> Result:
        """Decide whether one more event would be admitted, recording nothing."""
        return self._call(event_key, 0)

    def reset(self, event_key: EventKey) -> None:
        """Delete the state of event_key: its next event starts fresh."""
        r = self._call(event_key, -1)
        if r.error is not None:
            raise r.error

    def reserve(self, event_key: EventKey, estimate: int, lifetime=None, id: Optional[int] = None) -> "Reservation":
        """Reserve estimate units for event_key before the work whose cost is
        known after it: decided as allow_n(estimate) (reservation.result) and,
        admitted, held until settle or cancel, for at most lifetime (a
        timedelta or seconds; None: DEFAULT_LIFETIME, 5 minutes). A
        reservation never settled stays spent. id (an int in [1, 2^52]) is
        drawn at random unless given: give the same id to retry a reserve
        whose outcome is unknown (a retried reserve records nothing more).
        NotSupportedError, before any round trip, when the script refuses
        the modes (every script but token_bucket v7, for now)."""
        rid, key, args = self.reserve_call(event_key, estimate, lifetime, id)
        try:
            r = self.decode(self._run(key, args))
        except Exception as err:  # classified: raised, or admitted under fail_open
            r = self.failed(err)
        return Reservation(self, event_key, rid, estimate, r)

    def reservation(self, event_key: EventKey, id: int) -> "Reservation":
        """A handle on reservation id of event_key reserved elsewhere (another
        process, another language): its settle and cancel are sent as the
        reserving process would send them."""
        self.check_reservation(id)
        return Reservation(self, event_key, id, 0, None)

    def _settle(self, event_key: EventKey, args):
        try:
            return self._run(self.key(event_key), args)
        except Exception as err:  # never admitted: the caller may retry
            raise self.classify(err) from err

    def load_functions(self) -> None:
        """FUNCTION LOAD REPLACE the release's library (on every master of a
        cluster)."""
        self.client.function_load(library_source(self.script).decode(), replace=True)

    def _call(self, event_key: EventKey, n: int) -> Result:
        key, args = self.key(event_key), self.args(n)
        try:
            return self.decode(self._run(key, args))
        except Exception as err:  # classified: answer or no answer
            return self.failed(err)

    def _run(self, key: bytes, args):
        c, s = self.client, self.script
        if self.functions:
            try:
                return c.fcall(s.function, 1, key, *args)
            except Exception as err:
                if not self.missing_function(err):
                    raise
            self.load_functions()
            return c.fcall(s.function, 1, key, *args)
        try:
            return c.evalsha(s.sha1, 1, key, *args)
        except Exception as err:
            if type(err).__name__ != "NoScriptError":
                raise
        return c.eval(s.source, 1, key, *args)


class Reservation(ReservationState):
    """Units reserved by Limiter.reserve, to settle once the work's cost is
    known. See ratelua.reservation.Settlement for the answers."""

    def settle(self, actual: int) -> Optional[Settlement]:
        """Settle with the actual cost (an int in [0, 2^52]): estimate -
        actual is refunded to every limit (capped at a full bucket), or
        actual - estimate charged (never denied: the limits go into debt).
        Returns the Settlement, the earlier one after an answer, or None for
        a denied reservation (nothing to settle). Without an answer it raises
        (UnavailableError, even under fail_open): call it again with the same
        actual; it applies at most once."""
        if not self._before_settle(actual):
            return self.settlement
        return self._after_settle(self._limiter._settle(self.event_key, self._args(actual)))

    def cancel(self) -> Optional[Settlement]:
        """Give the whole estimate back: a settle with actual cost 0."""
        return self.settle(0)


SlidingWindow, TokenBucket, ZSetLog, AR1 = limiter_classes(Limiter)

__all__ = ["Limiter", "Reservation", "SlidingWindow", "TokenBucket", "ZSetLog", "AR1", "UnavailableError"]
