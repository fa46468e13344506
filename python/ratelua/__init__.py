"""ratelua: rate limiters that run atomically in Redis and Valkey as the
versioned Lua scripts of github.com/ratelua/ratelua, with the same state
keys as its Go API, so that Go, Python and Node services share one limit.

    import redis, ratelua
    logins = ratelua.SlidingWindow(redis.Redis(), ratelua.Window(1, 5, 1),
                                   ratelua.Window(5, 3600, 600), prefix="login")
    r = logins.allow("203.0.113.7")
    if not r.allowed: ...  # r.retry_after seconds, r.retry_after_timedelta

ratelua.Semaphore (also named Concurrency, as Go's NewConcurrency) holds at
most max slots at once per key, by leases. ratelua.aio has the same limiters for redis.asyncio clients; ratelua.asgi
the ASGI middleware.
"""

from .concurrency import Concurrency, Lease, Semaphore
from .errors import LeaseLostError, LimitError, RateluaError, ScriptError, UnavailableError
from .keys import escape_tag
from .limiter import AR1, Limiter, Reservation, SlidingWindow, TokenBucket, ZSetLog
from .limits import Bucket, Decay, Log, Slots, Window
from .reservation import DEFAULT_LIFETIME, NotSupportedError, Settlement, new_id as reservation_id
from .result import NEVER, Result

__version__ = "0.2.0"

__all__ = [
    "AR1", "Bucket", "Concurrency", "DEFAULT_LIFETIME", "Decay", "Lease", "LeaseLostError", "LimitError", "Limiter", "Log",
    "NEVER", "NotSupportedError", "RateluaError", "Reservation", "Result", "ScriptError", "Settlement", "reservation_id", "Semaphore", "SlidingWindow", "Slots", "TokenBucket", "UnavailableError", "Window", "ZSetLog", "escape_tag",
]
