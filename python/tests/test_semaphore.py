"""Semaphore (script concurrency) on real servers: single nodes and
six-node clusters of redis-server and valkey-server (see conftest.py)."""

from datetime import timedelta

import pytest
import redis

import ratelua
import ratelua.aio

from test_server import Clock, fresh


def test_acquire_deny_release(client):
    clock, who = Clock(), fresh()
    sem = ratelua.Semaphore(client, ratelua.Slots(3, 30), prefix="py-sem", clock=clock)
    assert sem.peek(who).allowed and client.exists(sem.key(who)) == 0, "peek holds nothing"
    leases = []
    for want in (2, 1, 0):
        lease, r = sem.acquire(who)
        assert lease is not None and r.allowed and r.remaining == want and r.limit == 0, r
        leases.append(lease)
    assert len({le.id for le in leases}) == 3 and all(le.id >= 1 for le in leases)
    assert client.exists(sem.key(who)) == 1, "the state lives under the Go API's key"
    assert 0 < client.pttl(sem.key(who)) <= 30_000, "the key has a TTL"
    clock.t += timedelta(seconds=10)
    lease, r = sem.acquire(who)
    assert lease is None and not r.allowed and r.remaining == 0
    assert r.retry_after == 20 and r.retry_after_timedelta == timedelta(seconds=20), "until the first lease expires"
    assert not sem.peek(who).allowed
    leases[1].release()
    assert sem.peek(who).remaining == 1, "a release frees its slot"
    again, r = sem.acquire(who)
    assert again is not None and r.allowed and again.id not in {le.id for le in leases}, "lease ids are not handed out twice"
    leases[1].release()  # a second release does nothing
    with pytest.raises(ratelua.LeaseLostError, match="was released"):
        leases[1].renew()


def test_acquire_n_all_or_none(client):
    clock, who = Clock(), fresh()
    sem = ratelua.Semaphore(client, ratelua.Slots(4, 60), clock=clock)
    big, r = sem.acquire_n(who, 3)
    assert big is not None and r.remaining == 1 and big.slots == 3
    none, r = sem.acquire_n(who, 2)
    assert none is None and not r.allowed and r.retry_after == 60
    never, r = sem.acquire_n(who, 5)
    assert never is None and r.never and r.retry_after == ratelua.NEVER
    with big:
        pass
    assert sem.peek(who).remaining == 4, "leaving the with block released the three slots"
    with pytest.raises(ratelua.LimitError, match="invalid n: must be"):
        sem.acquire_n(who, 0)


def test_renew_and_loss(client):
    clock, who = Clock(), fresh()
    sem = ratelua.Semaphore(client, ratelua.Slots(1, 10), clock=clock)
    lease, _ = sem.acquire(who)
    first = lease.deadline
    clock.t += timedelta(seconds=8)
    lease.renew()
    assert lease.deadline == first + timedelta(seconds=8) and not lease.lost
    clock.t += timedelta(seconds=8)  # past the first deadline: still held
    assert not sem.acquire(who)[1].allowed, "the renewed lease still holds the slot"
    lease.renew()
    clock.t += timedelta(seconds=10)
    assert lease.lost and "deadline" in str(lease.error), "the holder sees the loss without a round trip"
    with pytest.raises(ratelua.LeaseLostError):
        lease.renew()
    with pytest.raises(ratelua.LeaseLostError):
        lease.release()
    other, r = sem.acquire(who)
    assert other is not None and r.allowed, "the expired lease's slot came back"
    sem.reset(who)
    with pytest.raises(ratelua.LeaseLostError, match="server does not hold it"):
        other.renew()
    assert other.lost and sem.peek(who).remaining == 1


def test_server_clock_and_functions(client):
    who = fresh()
    sem = ratelua.Semaphore(client, ratelua.Slots(1, 5))
    by_fcall = ratelua.Semaphore(client, ratelua.Slots(1, 5), functions=True)
    lease, r = sem.acquire(who)
    assert r.allowed and 4 < r.reset_after <= 5
    assert not by_fcall.acquire(who)[1].allowed, "FCALL and EVALSHA share the state"
    lease.renew()
    lease.release()
    held, r = by_fcall.acquire(who)
    assert r.allowed
    held.release()


def test_fail_open_and_refusals(client):
    down = redis.Redis(port=1, socket_connect_timeout=1)
    with pytest.raises(ratelua.UnavailableError):
        ratelua.Semaphore(down, ratelua.Slots(1, 5)).acquire("x")
    lease, r = ratelua.Semaphore(down, ratelua.Slots(1, 5), fail_open=True).acquire("x")
    assert r.allowed and isinstance(r.error, ratelua.UnavailableError) and lease.local
    lease.renew()
    lease.release()  # a local lease has nothing to renew or release
    with pytest.raises(ratelua.LimitError, match="invalid limit 0: Max must be in"):
        ratelua.Semaphore(client, ratelua.Slots(0, 5))
    with pytest.raises(ratelua.LimitError, match="Lease must be positive"):
        ratelua.Semaphore(client, ratelua.Slots(1, 0))
    sem, who = ratelua.Semaphore(client, ratelua.Slots(1, 5), fail_open=True), fresh()
    client.set(sem.key(who), "not a sorted set")
    # v6 names another script's state (v5 answered WRONGTYPE).
    with pytest.raises(ratelua.ScriptError, match="holds a string that is not a concurrency state"):
        sem.acquire(who)
    assert client.get(sem.key(who)) == b"not a sorted set"


async def test_asyncio(aclient):
    clock, who = Clock(), fresh()
    sem = ratelua.aio.Semaphore(aclient, ratelua.Slots(2, 30), prefix="py-sem", clock=clock)
    a, r = await sem.acquire(who)
    assert r.allowed and r.remaining == 1
    b, r = await sem.acquire(who)
    assert r.allowed and r.remaining == 0
    none, r = await sem.acquire(who)
    assert none is None and r.retry_after == 30
    async with a:
        await a.renew()
    assert (await sem.peek(who)).remaining == 1
    await sem.reset(who)
    with pytest.raises(ratelua.LeaseLostError):
        await b.release()
    assert (await aclient.exists(sem.key(who))) == 1, "a reset keeps the lease counter"
