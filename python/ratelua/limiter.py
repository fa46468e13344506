"""The limiters over a synchronous redis-py client (redis.Redis or
redis.cluster.RedisCluster)."""

from .core import Spec, limiter_classes
from .errors import UnavailableError
from .keys import EventKey
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


SlidingWindow, TokenBucket, ZSetLog, AR1 = limiter_classes(Limiter)

__all__ = ["Limiter", "SlidingWindow", "TokenBucket", "ZSetLog", "AR1", "UnavailableError"]
