"""An acquire whose outcome is unknown (issue 30 row H3): the call ran on
the server but its caller never saw the reply (a timeout, an asyncio
cancellation). The semaphore sent a lease id of its choosing with the
acquire and releases it in the background, so the slot comes back long
before the lease's 30 s; fail_open never admits such an acquire. Real
servers (see conftest.py); only the reply is lost, by a wrapper of the
client."""

import asyncio
import time

import pytest
import redis.exceptions as rex

import ratelua
import ratelua.aio

from test_server import fresh

#: How long the slots may take to come back (the background release is
#: bounded by 2 s; this is only where the test gives up).
BOUND = 10.0


def _is_acquire(args) -> bool:
    # ARGV: n, unit, now, mode, max, lease[, id]: an acquire is mode "0"
    # with n >= 1.
    return len(args) >= 6 and str(args[3]) == "0" and int(args[0]) >= 1


class LostReply:
    """A redis-py client whose next `lose` acquires run on the server and
    then raise a timeout, as a reply lost on the way back does."""

    def __init__(self, client, lose):
        self._client, self.lose, self.swallowed = client, lose, []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def _lost(self, method, *a):
        reply = getattr(self._client, method)(*a)
        if self.lose > 0 and _is_acquire(a[3:]):
            self.lose -= 1
            self.swallowed.append(reply)
            raise rex.TimeoutError("Timeout reading from socket (the test lost the reply)")
        return reply

    def evalsha(self, *a):
        return self._lost("evalsha", *a)

    def eval(self, *a):
        return self._lost("eval", *a)

    def fcall(self, *a):
        return self._lost("fcall", *a)


class HangsAfterReply:
    """An asyncio client whose acquires run on the server, then wait until
    the caller cancels them (or raise a timeout when told to)."""

    def __init__(self, client, raise_timeout=False):
        self._client, self.raise_timeout, self.swallowed = client, raise_timeout, []
        self.ran = asyncio.Event()

    def __getattr__(self, name):
        return getattr(self._client, name)

    async def _hang(self, method, *a):
        reply = await getattr(self._client, method)(*a)
        if not _is_acquire(a[3:]):
            return reply
        self.swallowed.append(reply)
        self.ran.set()
        if self.raise_timeout:
            raise rex.TimeoutError("Timeout reading from socket (the test lost the reply)")
        await asyncio.Event().wait()  # until cancelled
        return reply

    async def evalsha(self, *a):
        return await self._hang("evalsha", *a)

    async def eval(self, *a):
        return await self._hang("eval", *a)

    async def fcall(self, *a):
        return await self._hang("fcall", *a)


def _wait_free(sem, who, want):
    deadline = time.monotonic() + BOUND
    while True:
        r = sem.peek(who)
        if r.remaining == want:
            return
        assert time.monotonic() < deadline, f"{BOUND} s after the acquires: {r.remaining} of {want} slots free"
        time.sleep(0.01)


async def _await_free(sem, who, want):
    deadline = time.monotonic() + BOUND
    while True:
        r = await sem.peek(who)
        if r.remaining == want:
            return
        assert time.monotonic() < deadline, f"{BOUND} s after the acquires: {r.remaining} of {want} slots free"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("fail_open", [False, True])
def test_acquire_with_unknown_outcome_released(client, fail_open):
    who = fresh()
    lossy = LostReply(client, 3)
    sem = ratelua.Semaphore(lossy, ratelua.Slots(2, 30), prefix="py-unknown", fail_open=fail_open)
    patient = ratelua.Semaphore(client, ratelua.Slots(2, 30), prefix="py-unknown")
    for i in range(3):
        with pytest.raises(ratelua.UnavailableError, match="Timeout"):
            sem.acquire(who)  # never admitted, fail_open or not
    assert lossy.swallowed and lossy.swallowed[0][0] == 1, f"the first acquire took a slot: {lossy.swallowed}"
    _wait_free(patient, who, 2)
    lease, r = patient.acquire(who)
    assert lease is not None and r.allowed and not lease.local, r
    lease.release()


@pytest.mark.parametrize("fail_open", [False, True])
async def test_asyncio_cancelled_acquire_released(aclient, fail_open):
    who = fresh()
    patient = ratelua.aio.Semaphore(aclient, ratelua.Slots(2, 30), prefix="py-unknown")
    for _ in range(3):
        hang = HangsAfterReply(aclient)
        sem = ratelua.aio.Semaphore(hang, ratelua.Slots(2, 30), prefix="py-unknown", fail_open=fail_open)
        task = asyncio.ensure_future(sem.acquire(who))
        await hang.ran.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert hang.swallowed[0][0] == 1, f"the cancelled acquire took a slot: {hang.swallowed}"
        await _await_free(patient, who, 2)
    lease, r = await patient.acquire(who)
    assert lease is not None and r.allowed and not lease.local, r
    await lease.release()


@pytest.mark.parametrize("fail_open", [False, True])
async def test_asyncio_timed_out_acquire_released(aclient, fail_open):
    who = fresh()
    hang = HangsAfterReply(aclient, raise_timeout=True)
    sem = ratelua.aio.Semaphore(hang, ratelua.Slots(2, 30), prefix="py-unknown", fail_open=fail_open)
    for _ in range(3):
        with pytest.raises(ratelua.UnavailableError, match="Timeout"):
            await sem.acquire(who)  # never admitted, fail_open or not
    assert hang.swallowed[0][0] == 1, f"the first acquire took a slot: {hang.swallowed}"
    await sem.wait_releases()
    patient = ratelua.aio.Semaphore(aclient, ratelua.Slots(2, 30), prefix="py-unknown")
    assert (await patient.peek(who)).remaining == 2, "the background releases gave the slots back"
    lease, r = await patient.acquire(who)
    assert lease is not None and r.allowed and not lease.local, r
    await lease.release()


def test_version_5_sends_no_lease_id(client):
    """v5 is released and unchanged: an acquire sends 6 arguments (its
    lease id is the script's)."""
    sent = []

    class Recording(LostReply):
        def _lost(self, method, *a):
            sent.append(a[3:])
            return getattr(self._client, method)(*a)

    who = fresh()
    for version, want in ((5, 6), (6, 7)):
        sem = ratelua.Semaphore(Recording(client, 0), ratelua.Slots(2, 30), prefix="py-unknown", version=version)
        lease, _ = sem.acquire(who)
        assert len(sent[-1]) == want, (version, sent[-1])
        if version == 6:
            assert int(sent[-1][6]) == lease.id and 1 <= lease.id <= 1 << 52
        lease.release()
