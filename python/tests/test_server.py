"""The limiters on real servers: single nodes and six-node clusters of
redis-server and valkey-server (see conftest.py)."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest
import redis

import ratelua
import ratelua.aio

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


class Clock:
    """A caller's clock the test moves."""

    def __init__(self):
        self.t = T0

    def __call__(self):
        return self.t


def fresh():
    return "user-" + uuid.uuid4().hex + "-{é}%"


def login(client, clock=None, **options):
    return ratelua.SlidingWindow(client, ratelua.Window(1, 5, 1), ratelua.Window(5, 3600, 600),
                                 prefix="login", clock=clock, **options)


def test_login_case(client):
    clock, who = Clock(), fresh()
    logins = login(client, clock)
    first = logins.allow(who)
    assert first.allowed and first.remaining == 0 and first.limit == 0
    assert client.exists(logins.key(who)) == 1, "the state lives under the Go API's key"
    denied = logins.allow(who)
    assert not denied.allowed and denied.limit == 0
    assert 4 < denied.retry_after <= 5 and denied.retry_after_timedelta == timedelta(microseconds=denied.retry_after_us)
    for i in range(4):
        clock.t += denied.retry_after_timedelta if i == 0 else timedelta(seconds=5)
        r = logins.allow(who)
        assert r.allowed, (i, r)
    clock.t += timedelta(seconds=5)
    r = logins.allow(who)
    assert not r.allowed and r.limit == 1 and r.retry_after > 3000, "the sixth in an hour waits for the hour"
    logins.reset(who)
    assert client.exists(logins.key(who)) == 0
    assert logins.allow(who).allowed


@pytest.mark.parametrize("make", [
    lambda c, **o: ratelua.SlidingWindow(c, ratelua.Window(3, 60, 1), **o),
    lambda c, **o: ratelua.TokenBucket(c, ratelua.Bucket(3, 1, 60), **o),
    lambda c, **o: ratelua.ZSetLog(c, ratelua.Log(3, 60), **o),
    lambda c, **o: ratelua.AR1(c, ratelua.Decay(3, 2, 60), **o),
], ids=["sliding_window", "token_bucket", "zset_log", "ar1"])
@pytest.mark.parametrize("version", [None, 5, 6], ids=["default", "v5", "v6"])
def test_every_script(client, make, version):
    clock, who = Clock(), fresh()
    limiter = make(client, clock=clock, prefix="py", version=version)
    assert limiter.version == (version or 7)
    assert limiter.peek(who).allowed and client.exists(limiter.key(who)) == 0, "peek records nothing"
    assert limiter.allow_n(who, 2).remaining == 1
    assert client.exists(limiter.key(who)) == 1
    assert f":v{limiter.script.state_version}:".encode() in limiter.key(who)
    assert limiter.allow(who).remaining == 0
    r = limiter.allow(who)
    assert not r.allowed and r.retry_after > 0
    never = limiter.allow_n(who, 4)
    assert not never.allowed and never.never and never.retry_after == ratelua.NEVER
    limiter.reset(who)
    assert limiter.allow_n(who, 3).allowed
    with pytest.raises(ratelua.LimitError, match="invalid n: must be"):
        limiter.allow_n(who, 0)


def test_noscript_and_functions(client):
    who = fresh()
    limiter = login(client)
    client.script_flush()  # on a cluster, every primary
    assert limiter.allow(who).allowed, "EVAL after NOSCRIPT"
    by_fcall = login(client, functions=True)
    try:
        client.function_delete(limiter.script.library.removesuffix(".library.lua"))
    except redis.exceptions.ResponseError:
        pass  # not loaded
    r = by_fcall.allow(who)
    assert not r.allowed and r.limit == 0, "FCALL loads the library and shares the state of EVALSHA"
    # Pinned to v5: FCALL names v5's function, from v5's library.
    v5, by_fcall_v5 = login(client, version=5), login(client, functions=True, version=5)
    assert by_fcall_v5.script.function.endswith("_v5") and v5.key(who) != limiter.key(who)
    assert by_fcall_v5.allow(who).allowed, "v5 has its own state"
    r = v5.allow(who)
    assert not r.allowed and r.limit == 0, "EVALSHA of v5 shares the state of v5's FCALL"


def test_fail_open_and_closed(client):
    down = redis.Redis(port=1, socket_connect_timeout=1)
    with pytest.raises(ratelua.UnavailableError):
        login(down).allow("x")
    r = login(down, fail_open=True).allow("x")
    assert r.allowed and isinstance(r.error, ratelua.UnavailableError)
    # An answer is never admitted: state of the wrong type.
    limiter, who = login(client, fail_open=True), fresh()
    client.set(limiter.key(who), "not a hash")
    with pytest.raises(ratelua.ScriptError, match="WRONGTYPE|ratelua"):
        limiter.allow(who)


async def test_asyncio(aclient):
    clock, who = Clock(), fresh()
    logins = ratelua.aio.SlidingWindow(aclient, ratelua.Window(1, 5, 1), ratelua.Window(5, 3600, 600),
                                       prefix="login", clock=clock)
    assert (await logins.allow(who)).allowed
    r = await logins.allow(who)
    assert not r.allowed and 4 < r.retry_after <= 5
    assert (await logins.peek(who)).remaining == 0
    await logins.reset(who)
    assert (await logins.allow(who)).allowed
    assert (await aclient.exists(logins.key(who))) == 1
