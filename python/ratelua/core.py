"""What the sync and asyncio limiters share: the key, the arguments, the
clock, the error classification and the reply decoding."""

from datetime import datetime, timedelta, timezone
from typing import Callable, List, Optional, Sequence, Tuple

import redis.exceptions as rex

from . import keys as _keys
from .errors import LimitError, RateluaError, ScriptError, UnavailableError
from .limits import MAX_SCRIPT_INT, micros, render
from .result import Result, open_result, result_of
from .scripts import SCRIPTS, Script

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_UNIT_US = {"ms": 1_000, "us": 1}

Clock = Callable[[], datetime]


class Spec:
    """A limiter's configuration: script, unit, limit arguments, key hash."""

    kind: type = object
    script_name: str = ""

    def __init__(self, client, limits: Sequence, prefix: str = "ratelua", count_denied: bool = False,
                 clock: Optional[Clock] = None, fail_open: bool = False, functions: bool = False):
        if client is None:
            raise LimitError(-1, "client", "is None")
        self.client = client
        self.unit, self._limit_args, self._quotas = render(list(limits), self.kind)
        _keys.check_prefix(prefix)
        self.prefix = prefix
        self.script: Script = SCRIPTS[self.script_name]
        self.hash = _keys.limits_hash(self.script.name, self.script.state_version, self.unit, self._limit_args)
        self.mode = "1" if count_denied else "0"
        self.clock = clock
        self.fail_open = fail_open
        self.functions = functions

    @property
    def limits(self) -> int:
        """How many limits the limiter checks."""
        return len(self._quotas)

    def quota(self, i: int) -> Tuple[int, timedelta]:
        """Limit i as a policy for clients: at most max events in window
        (as ratelua's Go Limiter.Quota)."""
        if not 0 <= i < len(self._quotas):
            return 0, timedelta(0)
        q, w = self._quotas[i]
        return q, timedelta(microseconds=w)

    def key(self, event_key: _keys.EventKey) -> bytes:
        """The state key of event_key, the Go API's byte for byte."""
        return _keys.state_key(self.prefix, event_key, self.script.name, self.script.state_version, self.hash)

    def now(self) -> str:
        """The clock's reading in the unit; '' for the server's clock."""
        if self.clock is None:
            return ""
        return self.now_of(self.clock())

    def now_of(self, t: datetime) -> str:
        """A reading t of the caller's clock in the unit."""
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        n = ((t - _EPOCH) // timedelta(microseconds=1)) // _UNIT_US[self.unit]
        if n < 0 or n > MAX_SCRIPT_INT:
            raise LimitError(-1, "Clock", f"must read between 1970 and 2^52 {self.unit} after it, got {t.isoformat()}")
        return str(n)

    def args(self, n: int, now: Optional[str] = None) -> List[str]:
        """The ARGV of a call with eventCount n, as the Go API sends it."""
        return [str(n), self.unit, self.now() if now is None else now, self.mode, *self._limit_args]

    @staticmethod
    def check_n(n: int) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > MAX_SCRIPT_INT:
            raise LimitError(-1, "n", f"must be in [1, 2^52], got {n!r}")

    def decode(self, reply) -> Result:
        return result_of(reply, _UNIT_US[self.unit], str(self.script))

    def classify(self, err: BaseException) -> RateluaError:
        """ScriptError for any answer of the server, UnavailableError for no
        answer."""
        if isinstance(err, RateluaError):
            return err
        if isinstance(err, rex.BusyLoadingError):  # LOADING is an answer
            return ScriptError(str(self.script), str(err))
        if isinstance(err, (rex.ConnectionError, rex.TimeoutError, OSError, TimeoutError)):
            return UnavailableError(str(self.script), err)
        if isinstance(err, rex.ResponseError):
            return ScriptError(str(self.script), str(err))
        return ScriptError(str(self.script), f"{type(err).__name__}: {err}")

    def failed(self, err: BaseException) -> Result:
        """Admit a call without an answer under fail_open; raise otherwise."""
        e = self.classify(err)
        if self.fail_open and isinstance(e, UnavailableError):
            return open_result(e)
        raise e from err

    @staticmethod
    def missing_function(err: BaseException) -> bool:
        return isinstance(err, rex.ResponseError) and "function not found" in str(err).lower()


def limiter_classes(base):
    """The four limiter classes over a sync or asyncio base class."""
    from .limits import Bucket, Decay, Log, Window

    def make(name, script, kind, doc):
        def __init__(self, client, *limits, **options):
            base.__init__(self, client, limits, **options)

        return type(name, (base,), {"kind": kind, "script_name": script, "__init__": __init__, "__doc__": doc})

    return (
        make("SlidingWindow", "sliding_window", Window,
             "Every Window at once (script sliding_window): one hash per event key.\n\n"
             "SlidingWindow(client, Window(1, 5), Window(5, 3600, 600), prefix='login')"),
        make("TokenBucket", "token_bucket", Bucket, "Token buckets (script token_bucket): one small string per event key."),
        make("ZSetLog", "zset_log", Log, "An exact sliding log (script zset_log): one sorted set per event key."),
        make("AR1", "ar1", Decay, "Exponentially decaying counts (script ar1): the least memory and work."),
    )


__all__ = ["Spec", "micros"]
