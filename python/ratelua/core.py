"""What the sync and asyncio limiters share: the key, the arguments, the
clock, the error classification and the reply decoding."""

import inspect
from datetime import datetime, timedelta, timezone
from typing import Callable, List, Optional, Sequence, Tuple

import redis.exceptions as rex

from . import keys as _keys
from . import reservation as _reservation
from .errors import LimitError, RateluaError, ScriptError, UnavailableError
from .limits import MAX_SCRIPT_INT, micros, render
from .result import Result, open_result, result_of
from .scripts import Script, lookup

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The earliest reading of a caller's clock taken as right: an earlier one
#: is a clock in another unit or epoch (seconds read as milliseconds...).
CLOCK_FLOOR = datetime(2000, 1, 1, tzinfo=timezone.utc)
_UNIT_US = {"ms": 1_000, "us": 1}

Clock = Callable[[], datetime]


class Spec:
    """A limiter's configuration: script, unit, limit arguments, key hash."""

    kind: type = object
    script_name: str = ""
    #: Whether the class calls an asyncio client (ratelua.aio) or a
    #: synchronous one.
    is_async: bool = False

    def __init__(self, client, limits: Sequence, prefix: str = "ratelua", count_denied: bool = False,
                 clock: Optional[Clock] = None, fail_open: bool = False, functions: bool = False,
                 version: Optional[int] = None):
        if client is None:
            raise LimitError(-1, "client", "is None")
        self._check_client(client)
        self.client = client
        self.unit, self._limit_args, self._quotas = render(list(limits), self.kind)
        _keys.check_prefix(prefix)
        self.prefix = prefix
        if clock is not None and not callable(clock):
            raise LimitError(-1, "Clock", f"must be a callable returning a datetime, or None, got {clock!r}")
        self.script: Script = lookup(self.script_name, version)
        self.hash = _keys.limits_hash(self.script.name, self.script.state_version, self.unit, self._limit_args)
        self.mode = "1" if count_denied else "0"
        self.clock = clock
        self.fail_open = fail_open
        self.functions = functions

    def _check_client(self, client) -> None:
        """Refuse a redis-py client of the other kind (sync vs asyncio): its
        calls would answer coroutines where replies are expected, or the
        reverse."""
        is_async = _is_async_client(client)
        if is_async is None or is_async == self.is_async:
            return
        cls = f"{type(client).__module__}.{type(client).__qualname__}"
        name = type(self).__name__
        if is_async:
            raise LimitError(-1, "client", f"is an asyncio client ({cls}): use ratelua.aio.{name}, whose methods are "
                             f"coroutines, or pass a redis.Redis or redis.cluster.RedisCluster to ratelua.{name}")
        raise LimitError(-1, "client", f"is a synchronous client ({cls}): use ratelua.{name}, or pass a "
                         f"redis.asyncio.Redis or redis.asyncio.cluster.RedisCluster to ratelua.aio.{name}")

    @property
    def version(self) -> int:
        """The script version the limiter calls."""
        return self.script.version

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

    @staticmethod
    def reading_of(t) -> datetime:
        """A reading t of the caller's clock as an aware datetime (a naive
        one is UTC); LimitError for anything but a datetime after 2000."""
        if not isinstance(t, datetime):
            hint = ""
            if isinstance(t, (int, float)) and not isinstance(t, bool):
                hint = " (for a Unix time in seconds, return datetime.fromtimestamp(t, timezone.utc))"
            raise LimitError(-1, "Clock", f"must return a datetime.datetime, got {type(t).__name__} {t!r}{hint}")
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        if t < CLOCK_FLOOR:
            raise LimitError(-1, "Clock", f"must read after 2000-01-01, got {t.isoformat()} (a clock in another unit "
                             "or epoch?)")
        return t

    def now_of(self, t: datetime) -> str:
        """A reading t of the caller's clock in the unit."""
        t = self.reading_of(t)
        n = ((t - _EPOCH) // timedelta(microseconds=1)) // _UNIT_US[self.unit]
        if n > MAX_SCRIPT_INT:
            raise LimitError(-1, "Clock", f"must read at most 2^52 {self.unit} after 1970, got {t.isoformat()}")
        return str(n)

    def args(self, n: int, now: Optional[str] = None) -> List[str]:
        """The ARGV of a call with eventCount n, as the Go API sends it."""
        return [str(n), self.unit, self.now() if now is None else now, self.mode, *self._limit_args]

    @property
    def reserves(self) -> bool:
        """Whether the limiter's script takes reserve and settle (token_bucket
        v7 does); reserve raises NotSupportedError otherwise."""
        return _reservation.reserves(self.script)

    def reservation_args(self, n: int, mode: str, now: Optional[str] = None) -> List[str]:
        """The ARGV of a reserve (n the estimate, mode 'reserve:<id>:<lifetime>')
        or a settle (n the actual cost, mode 'settle:<id>'). count_denied does
        not apply: a denied reserve records nothing."""
        return [str(n), self.unit, self.now() if now is None else now, mode, *self._limit_args]

    def reserve_call(self, event_key: _keys.EventKey, estimate: int, lifetime, rid: Optional[int]):
        """(id, key, ARGV) of a reserve, every argument checked before any
        round trip: NotSupportedError when the script refuses the modes."""
        if not self.reserves:
            raise _reservation.NotSupportedError(str(self.script), "reserve")
        _reservation.check_estimate(estimate)
        units = _reservation.lifetime_in(self.unit, lifetime)
        rid = _reservation.new_id() if rid is None else _reservation.check_id(rid)
        key = self.key(event_key)
        return rid, key, self.reservation_args(estimate, f"reserve:{rid}:{units}")

    def check_reservation(self, rid: int) -> None:
        """A settle's checks: the script takes the modes, the id is one."""
        if not self.reserves:
            raise _reservation.NotSupportedError(str(self.script), "settle")
        _reservation.check_id(rid)

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


def _is_async_client(client) -> Optional[bool]:
    """True for a redis-py asyncio client, False for a synchronous one,
    None when the client is neither (left to the first call)."""
    async_classes: tuple = ()
    try:
        import redis.asyncio as aredis
        async_classes = (aredis.Redis,)
        import redis.asyncio.cluster as acluster
        async_classes += (acluster.RedisCluster,)
    except ImportError:  # an old redis-py: what it has
        pass
    import redis
    import redis.cluster
    if isinstance(client, async_classes):
        return True
    if isinstance(client, (redis.Redis, redis.cluster.RedisCluster)):
        return False
    execute = getattr(client, "execute_command", None)
    if execute is None:
        return None
    return inspect.iscoroutinefunction(execute)


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
