"""The limiters over an asyncio redis-py client (redis.asyncio.Redis or
redis.asyncio.cluster.RedisCluster): the same names as ratelua's, with
coroutine methods."""

from .core import Spec, limiter_classes
from .keys import EventKey
from .result import Result
from .scripts import library_source


class Limiter(Spec):
    """ratelua.Limiter with coroutine methods; see its documentation."""

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


SlidingWindow, TokenBucket, ZSetLog, AR1 = limiter_classes(Limiter)

__all__ = ["Limiter", "SlidingWindow", "TokenBucket", "ZSetLog", "AR1"]
