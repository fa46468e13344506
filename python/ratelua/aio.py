"""The limiters over an asyncio redis-py client (redis.asyncio.Redis or
redis.asyncio.cluster.RedisCluster): the same names as ratelua's, with
coroutine methods."""

import asyncio
from typing import Optional, Set, Tuple

from .concurrency import UNKNOWN_RELEASE_TIMEOUT, LeaseState, SemaphoreSpec
from .core import Spec, limiter_classes
from .errors import UnavailableError
from .keys import EventKey
from .reservation import ReservationState, Settlement
from .result import Result, open_result
from .scripts import library_source


class Limiter(Spec):
    """ratelua.Limiter with coroutine methods; see its documentation."""

    is_async = True

    async def allow(self, event_key: EventKey) -> Result:
        """Record one event for event_key and decide it."""
        return await self.allow_n(event_key, 1)

    async def allow_n(self, event_key: EventKey, n: int) -> Result:
        """Record n events (n >= 1) for event_key and decide them together."""
        self.check_n(n)
        return await self._call(event_key, n)

    async def peek(self, event_key: EventKey) -> Result:
        """Decide whether one more event would be admitted, recording nothing."""
        return await self._call(event_key, 0)

    async def reset(self, event_key: EventKey) -> None:
        """Delete the state of event_key: its next event starts fresh."""
        r = await self._call(event_key, -1)
        if r.error is not None:
            raise r.error

    async def reserve(self, event_key: EventKey, estimate: int, lifetime=None, id: Optional[int] = None) -> "Reservation":
        """ratelua.Limiter.reserve as a coroutine; see its documentation."""
        rid, key, args = self.reserve_call(event_key, estimate, lifetime, id)
        try:
            r = self.decode(await self._run(key, args))
        except Exception as err:  # classified: raised, or admitted under fail_open
            r = self.failed(err)
        return Reservation(self, event_key, rid, estimate, r)

    def reservation(self, event_key: EventKey, id: int) -> "Reservation":
        """A handle on reservation id of event_key reserved elsewhere."""
        self.check_reservation(id)
        return Reservation(self, event_key, id, 0, None)

    async def _settle(self, event_key: EventKey, args):
        try:
            return await self._run(self.key(event_key), args)
        except Exception as err:  # never admitted: the caller may retry
            raise self.classify(err) from err

    async def load_functions(self) -> None:
        """FUNCTION LOAD REPLACE the release's library (on every master)."""
        await self.client.function_load(library_source(self.script).decode(), replace=True)

    async def _call(self, event_key: EventKey, n: int) -> Result:
        key, args = self.key(event_key), self.args(n)
        try:
            return self.decode(await self._run(key, args))
        except Exception as err:  # classified: answer or no answer
            return self.failed(err)

    async def _run(self, key: bytes, args):
        c, s = self.client, self.script
        if self.functions:
            try:
                return await c.fcall(s.function, 1, key, *args)
            except Exception as err:
                if not self.missing_function(err):
                    raise
            await self.load_functions()
            return await c.fcall(s.function, 1, key, *args)
        try:
            return await c.evalsha(s.sha1, 1, key, *args)
        except Exception as err:
            if type(err).__name__ != "NoScriptError":
                raise
        return await c.eval(s.source, 1, key, *args)


class Reservation(ReservationState):
    """ratelua.Reservation with coroutine methods; see its documentation."""

    async def settle(self, actual: int) -> Optional[Settlement]:
        """ratelua.Reservation.settle as a coroutine."""
        if not self._before_settle(actual):
            return self.settlement
        return self._after_settle(await self._limiter._settle(self.event_key, self._args(actual)))

    async def cancel(self) -> Optional[Settlement]:
        """Give the whole estimate back: a settle with actual cost 0."""
        return await self.settle(0)


SlidingWindow, TokenBucket, ZSetLog, AR1 = limiter_classes(Limiter)



class Lease(LeaseState):
    """ratelua.Lease with coroutine methods; an async context manager."""

    async def renew(self) -> None:
        """Extend the lease to a full lease time from now; raises
        LeaseLostError when it is no longer held."""
        if not self._before_renew():
            return
        at, reply = await self._sem._op(self.event_key, self.slots, "renew", self.id)
        self._after_renew(at, reply)

    async def release(self) -> None:
        """Give the slots back; a second release does nothing."""
        if not self._before_release():
            return
        _, reply = await self._sem._op(self.event_key, self.slots, "release", self.id)
        self._after_release(reply)

    async def __aenter__(self) -> "Lease":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.release()


class Semaphore(SemaphoreSpec):
    """ratelua.Semaphore with coroutine methods; see its documentation."""

    is_async = True

    _run = Limiter._run
    load_functions = Limiter.load_functions

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        #: The background releases under way (a reference keeps each task alive).
        self._releases: Set["asyncio.Task[None]"] = set()

    async def acquire(self, event_key: EventKey) -> Tuple[Optional[Lease], Result]:
        """Acquire one slot: (a Lease, the Result) or (None, the Result)."""
        return await self.acquire_n(event_key, 1)

    async def acquire_n(self, event_key: EventKey, n: int) -> Tuple[Optional[Lease], Result]:
        """Acquire n slots (n >= 1) as one lease, all or none."""
        self.check_n(n)
        lease_id = self.new_lease_id()
        try:
            at, reply = await self._op(event_key, n, "0", lease_id)
        except BaseException as err:  # asyncio.CancelledError included
            if lease_id != 0 and self.outcome_unknown(err):
                self._release_unknown(event_key, n, lease_id)
            # No answer: admitted under fail_open with a local lease, unless
            # the call timed out or was cancelled (it may hold slots).
            if not self.fail_open or not isinstance(err, UnavailableError) or self.caller_gave_up(err):
                raise
            return Lease(self, event_key, n, 0, None), open_result(err)
        r = self.decode(reply)
        return (Lease(self, event_key, n, reply[4], at) if r.allowed else None), r

    def _release_unknown(self, event_key: EventKey, n: int, lease_id: int) -> None:
        """Release, in a background task bounded by UNKNOWN_RELEASE_TIMEOUT
        (and the lease time), lease lease_id of n slots of event_key, whose
        acquire has an unknown outcome. A lease the server does not hold is
        left alone; a failure leaves the slots to the lease's expiry."""
        async def release() -> None:
            try:
                bound = min(UNKNOWN_RELEASE_TIMEOUT, self._lease.total_seconds())
                await asyncio.wait_for(self._op(event_key, n, "release", lease_id), bound)
            except Exception:  # the lease expires on its own
                pass

        task = asyncio.get_running_loop().create_task(release())
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def wait_releases(self) -> None:
        """Wait until the background releases of acquires whose outcome
        was unknown have ended (each is bounded in time)."""
        while self._releases:
            await asyncio.gather(*self._releases, return_exceptions=True)

    async def peek(self, event_key: EventKey) -> Result:
        """Whether one more slot is free, holding nothing."""
        return self.decode((await self._op(event_key, 0))[1])

    async def reset(self, event_key: EventKey) -> None:
        """Drop every lease of event_key: their holders lose them."""
        await self._op(event_key, -1)

    async def _op(self, event_key: EventKey, n: int, mode: str = "0", lease_id: int = 0):
        at, now = self.reading()
        try:
            reply = await self._run(self.key(event_key), self.op_args(n, now, mode, lease_id))
            self.decode(reply)  # the shape
        except Exception as err:
            raise self.classify(err) from err
        return at, reply


Concurrency = Semaphore

__all__ = ["Limiter", "Reservation", "SlidingWindow", "TokenBucket", "ZSetLog", "AR1", "Semaphore", "Concurrency", "Lease"]
