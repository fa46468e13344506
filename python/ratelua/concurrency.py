"""Concurrency: at most max slots held at once across every process that
shares a key (script concurrency), each by a lease that comes back on its
own when its holder stops renewing it. The state key and ARGV are the Go
API's (ratelua.NewConcurrency), so Go, Python and Node holders share one
semaphore.

No background renewal: a holder whose work may outlast the lease calls
Lease.renew() itself, more often than the lease time."""

import hashlib
import secrets
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Optional, Tuple

import redis.exceptions as rex

from .core import Clock, Spec
from .errors import LeaseLostError, LimitError, RateluaError, ScriptError, UnavailableError
from .keys import EventKey
from .limiter import Limiter
from .limits import MAX_SCRIPT_INT, Slots
from .result import Result, open_result

_UNIT = {"ms": timedelta(milliseconds=1), "us": timedelta(microseconds=1)}

#: The bound, in seconds, of the background release of an acquire whose
#: outcome is unknown (at most the lease time, after which the slots are
#: free anyway), as the Go API's.
UNKNOWN_RELEASE_TIMEOUT = 2.0


class SemaphoreSpec(Spec):
    """What the sync and asyncio semaphores share."""

    kind = Slots
    script_name = "concurrency"

    def __init__(self, client, slots: Slots, prefix: str = "ratelua", clock: Optional[Clock] = None,
                 fail_open: bool = False, functions: bool = False, version: Optional[int] = None):
        if not isinstance(slots, Slots):
            raise LimitError(0, "Slots", f"expected a ratelua.Slots, got {type(slots).__name__}")
        super().__init__(client, [slots], prefix=prefix, clock=clock, fail_open=fail_open, functions=functions,
                         version=version)
        # One key per event key whatever max and the lease time: the hash
        # names only the script's state version and the unit (as in Go).
        text = f"{self.script.name}@v{self.script.state_version} {self.unit}"
        self.hash = hashlib.sha1(text.encode()).hexdigest()[:8]
        self.slots = slots
        self._lease = timedelta(microseconds=slots._durations()[0])
        self._slack = _UNIT[self.unit]

    def reading(self) -> Tuple[datetime, str]:
        """The time of a call and its now argument ('' for the server's clock)."""
        if self.clock is None:
            return datetime.now(timezone.utc), ""
        t = self.reading_of(self.clock())
        return t, self.now_of(t)

    def op_args(self, n: int, now: str, mode: str = "0", lease_id: int = 0):
        """The ARGV of a call: eventCount n in mode, and the lease id
        (ARGV[7]) unless 0: in modes renew and release the lease's, in an
        acquire the caller's choice."""
        args = [str(n), self.unit, now, mode, *self._limit_args]
        if lease_id != 0:
            args.append(str(lease_id))
        return args

    def new_lease_id(self) -> int:
        """The lease id an acquire sends: from script version 6 one chosen at
        random in [1, 2^52], so that an acquire whose outcome is unknown can
        be released by it; 0 (none sent) on version 5, which numbers the
        lease itself."""
        if self.script.version < 6:
            return 0
        return 1 + secrets.randbelow(MAX_SCRIPT_INT)

    @staticmethod
    def outcome_unknown(err: BaseException) -> bool:
        """Whether an acquire that raised err may have run on the server: no
        answer (a timeout, a connection lost), an interruption
        (asyncio.CancelledError, KeyboardInterrupt), anything but the
        server's answer or a refusal before the call."""
        if isinstance(err, (LimitError, LeaseLostError)):
            return False
        if isinstance(err, ScriptError):  # an answer, unless it wraps something else the client raised
            cause = err.__cause__
            return cause is not None and cause is not err and not isinstance(cause, (rex.ResponseError, RateluaError))
        return True

    @staticmethod
    def caller_gave_up(err: BaseException) -> bool:
        """Whether err ended an acquire by the caller's bound (a timeout) or an
        interruption rather than an unreachable server: such an acquire is
        not admitted, even under fail_open (it may hold slots on the server
        until its background release)."""
        if not isinstance(err, Exception):
            return True  # asyncio.CancelledError, KeyboardInterrupt, SystemExit
        cause = err.__cause__ if isinstance(err, UnavailableError) else err
        return isinstance(cause, (rex.TimeoutError, TimeoutError))

    def args(self, n: int, now: Optional[str] = None):
        """The ARGV of an acquire of n slots (0: peek, < 0: reset), as the Go
        API's Semaphore.Args sends it."""
        return self.op_args(n, self.now() if now is None else now)

    def decode(self, reply) -> Result:
        r = super().decode(reply)
        return replace(r, limit=0 if reply[4] != 0 else -1)

    def deadline_of(self, at: datetime) -> datetime:
        return at + self._lease - self._slack

    def now_dt(self) -> datetime:
        return self.reading()[0]


class LeaseState:
    """A lease's bookkeeping, shared by the sync and asyncio leases."""

    def __init__(self, sem: SemaphoreSpec, event_key: EventKey, slots: int, lease_id: int, at: Optional[datetime]):
        self._sem, self.event_key, self.slots, self.id = sem, event_key, slots, lease_id
        #: True for a lease admitted by fail_open without an answer: renew
        #: and release do nothing.
        self.local = at is None
        self._deadline = None if at is None else sem.deadline_of(at)
        self._released = False
        self._error: Optional[LeaseLostError] = None

    @property
    def deadline(self) -> Optional[datetime]:
        """When the lease is lost unless renewed before (on the
        semaphore's clock); None for a local lease."""
        self._check_deadline()
        return self._deadline

    @property
    def error(self) -> Optional[LeaseLostError]:
        """Why the lease was lost; None while it is held (or released)."""
        self._check_deadline()
        return self._error

    @property
    def lost(self) -> bool:
        """True once the lease is known not to be held any more."""
        return self.error is not None

    def _check_deadline(self) -> None:
        if self._error is None and not self._released and not self.local and self._sem.now_dt() >= self._deadline:
            self._lose("not renewed before its deadline")

    def _lose(self, reason: str) -> LeaseLostError:
        if self._error is None:
            self._error = LeaseLostError(self.id, reason)
        return self._error

    def _before_renew(self) -> bool:
        """Whether a renew goes to the server; raises if the lease is lost."""
        if self.local:
            return False
        self._check_deadline()
        if self._error is not None:
            raise self._error
        if self._released:
            raise LeaseLostError(self.id, "was released")
        return True

    def _after_renew(self, at: datetime, reply) -> None:
        if self._released and self._error is None:
            raise LeaseLostError(self.id, "was released")
        if reply[0] != 1:
            raise self._lose("the server does not hold it (expired, reset, or forgotten by a failover)")
        deadline = self._sem.deadline_of(at)
        if self._error is None and deadline > self._deadline:
            self._deadline = deadline
        if self._error is not None:
            raise self._error

    def _before_release(self) -> bool:
        """Whether a release goes to the server; raises if the lease is lost."""
        if self._released or self.local:
            self._released = True
            return False
        self._check_deadline()
        self._released = True
        if self._error is not None:
            raise self._error
        return True

    def _after_release(self, reply) -> None:
        if reply[0] != 1:
            raise self._lose("the server did not hold it any more (expired, reset, or forgotten by a failover)")

    def __repr__(self) -> str:
        return f"<ratelua lease {self.id} of {self.slots} slot(s) on {self.event_key!r}>"


class Lease(LeaseState):
    """Slots held on one semaphore key until released or lost. Use it as a
    context manager to release it on exit."""

    def renew(self) -> None:
        """Extend the lease to a full lease time from now. Raises
        LeaseLostError when the lease is no longer held (its slots may be
        another holder's), ScriptError or UnavailableError when the server
        did not renew it."""
        if not self._before_renew():
            return
        at, reply = self._sem._op(self.event_key, self.slots, "renew", self.id)
        self._after_renew(at, reply)

    def release(self) -> None:
        """Give the slots back. A second release does nothing; a release of
        a lease that was lost raises LeaseLostError."""
        if not self._before_release():
            return
        _, reply = self._sem._op(self.event_key, self.slots, "release", self.id)
        self._after_release(reply)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Semaphore(SemaphoreSpec):
    """At most slots.max slots held at once per event key, over a
    synchronous redis-py client (script concurrency).

        jobs = ratelua.Semaphore(redis.Redis(), ratelua.Slots(10, 30), prefix="export")
        lease, r = jobs.acquire("tenant-7")
        if lease is None: ...  # r.retry_after seconds until a lease expires
        with lease: ...        # renew() within 30 s if the work lasts longer

    Options (keywords): prefix, clock, fail_open, functions and version, as
    for ratelua.Limiter (counting denied acquires does not apply)."""

    _run = Limiter._run
    load_functions = Limiter.load_functions

    def acquire(self, event_key: EventKey) -> Tuple[Optional[Lease], Result]:
        """Acquire one slot: (a Lease, the Result) when allowed, (None, the
        Result with retry_after) when every slot is held."""
        return self.acquire_n(event_key, 1)

    def acquire_n(self, event_key: EventKey, n: int) -> Tuple[Optional[Lease], Result]:
        """Acquire n slots (n >= 1) as one lease, all or none."""
        self.check_n(n)
        lease_id = self.new_lease_id()
        try:
            at, reply = self._op(event_key, n, "0", lease_id)
        except BaseException as err:
            if lease_id != 0 and self.outcome_unknown(err):
                self._release_unknown(event_key, n, lease_id)
            # No answer: admitted under fail_open with a local lease, unless
            # the call timed out or was interrupted (it may hold slots).
            if not self.fail_open or not isinstance(err, UnavailableError) or self.caller_gave_up(err):
                raise
            return Lease(self, event_key, n, 0, None), open_result(err)
        r = self.decode(reply)
        return (Lease(self, event_key, n, reply[4], at) if r.allowed else None), r

    def _release_unknown(self, event_key: EventKey, n: int, lease_id: int) -> None:
        """Release, in a background thread, lease lease_id of n slots of
        event_key, whose acquire has an unknown outcome. A lease the server
        does not hold is left alone; a failure leaves the slots to the
        lease's expiry. The thread makes one call, bounded by the client's
        socket timeout."""
        def release() -> None:
            try:
                self._op(event_key, n, "release", lease_id)
            except Exception:  # the lease expires on its own
                pass

        threading.Thread(target=release, name=f"ratelua-release-{lease_id}", daemon=True).start()

    def peek(self, event_key: EventKey) -> Result:
        """Whether one more slot is free, holding nothing."""
        return self.decode(self._op(event_key, 0)[1])

    def reset(self, event_key: EventKey) -> None:
        """Drop every lease of event_key: their holders lose them."""
        self._op(event_key, -1)

    def _op(self, event_key: EventKey, n: int, mode: str = "0", lease_id: int = 0):
        at, now = self.reading()
        try:
            reply = self._run(self.key(event_key), self.op_args(n, now, mode, lease_id))
            self.decode(reply)  # the shape
        except Exception as err:
            raise self.classify(err) from err
        return at, reply


#: The Go API's name for the semaphore's constructor, NewConcurrency.
Concurrency = Semaphore

__all__ = ["Concurrency", "Lease", "LeaseState", "Semaphore", "SemaphoreSpec", "Slots"]
