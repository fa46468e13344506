"""What a limiter refuses when it is built (or when its clock is read),
before any round trip: a LimitError naming the field, as the Go API's
*LimitError does. No server needed."""

import math
from datetime import datetime, timedelta, timezone

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

import ratelua
import ratelua.aio


class NoClient:
    """Never called: the limiters are only built."""


def refused(make, index, field, text):
    with pytest.raises(ratelua.LimitError) as info:
        make()
    e = info.value
    assert (e.index, e.field) == (index, field), str(e)
    assert text in str(e), str(e)
    return e


@pytest.mark.parametrize("duration,text", [
    (float("nan"), "finite"),
    (float("inf"), "finite"),
    (-float("inf"), "finite"),
    (1e300, "at most 2^52 ms"),
    (10**30, "at most 2^52 ms"),
    ("10s", "timedelta or a number of seconds, got str '10s'"),
    (None, "got NoneType"),
    (True, "got bool"),
    (1e-9, "resolution floor of 1 µs"),
    (0, "must be positive"),
    (-5, "must be positive"),
    (timedelta(0), "must be positive"),
])
def test_bad_durations_name_the_field(duration, text):
    # The second limit is the bad one: the index is the limit's.
    refused(lambda: ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), ratelua.Window(3, duration, 1)),
            1, "Duration", text)
    refused(lambda: ratelua.TokenBucket(NoClient(), ratelua.Bucket(3, 1, duration)), 0, "RefillInterval", text)
    refused(lambda: ratelua.ZSetLog(NoClient(), ratelua.Log(3, duration)), 0, "Window", text)
    refused(lambda: ratelua.AR1(NoClient(), ratelua.Decay(3, 2, duration)), 0, "Resolution", text)
    refused(lambda: ratelua.Semaphore(NoClient(), ratelua.Slots(3, duration)), 0, "Lease", text)
    if duration is not None:  # a resolution of None is a tenth of the duration
        refused(lambda: ratelua.SlidingWindow(NoClient(), ratelua.Window(3, 60, duration)), 0, "Resolution", text)


@pytest.mark.parametrize("factor,text", [
    ("2", "must be a number, got str '2'"),
    (float("nan"), "must be in [1.001, 10^6]"),
    (float("inf"), "must be in [1.001, 10^6]"),
    (1.0005, "at most 3 decimals"),
    (None, "must be a number, got NoneType"),
])
def test_bad_factors_name_the_field(factor, text):
    refused(lambda: ratelua.AR1(NoClient(), ratelua.Decay(3, factor, 1)), 0, "Factor", text)


def test_timedelta_and_seconds_name_the_same_key():
    a = ratelua.SlidingWindow(NoClient(), ratelua.Window(5, timedelta(minutes=1), timedelta(seconds=6)))
    b = ratelua.SlidingWindow(NoClient(), ratelua.Window(5, 60, 6.0))
    assert a.key("k") == b.key("k") and a.args(1, "") == b.args(1, "")
    c = ratelua.TokenBucket(NoClient(), ratelua.Bucket(5, 1, timedelta(milliseconds=1500)))
    assert c.unit == "ms" and c.args(1, "")[-1] == "1500"


@pytest.mark.parametrize("reading,text", [
    (1_700_000_000.0, "got float 1700000000.0 (for a Unix time in seconds, return datetime.fromtimestamp"),
    (1_700_000_000, "got int"),
    ("2025-01-01", "got str"),
    (datetime(1970, 1, 20, tzinfo=timezone.utc), "must read after 2000-01-01, got 1970-01-20"),
    (datetime(1999, 12, 31, 23, 59), "must read after 2000-01-01"),
])
def test_bad_clock_readings_are_refused(reading, text):
    for make in (lambda: ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), clock=lambda: reading),
                 lambda: ratelua.Semaphore(NoClient(), ratelua.Slots(1, 5), clock=lambda: reading)):
        limiter = make()
        refused(lambda: limiter.args(1), -1, "Clock", text)


def test_clock_reading_after_2000_is_sent():
    t = datetime(2000, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    limiter = ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), clock=lambda: t)
    assert limiter.args(1)[2] == str(946_684_801_000)


def test_clock_that_is_not_callable():
    refused(lambda: ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), clock=datetime.now(timezone.utc)),
            -1, "Clock", "must be a callable")


def test_client_of_the_wrong_kind():
    """A redis.asyncio client given to the sync limiter answered coroutines
    (ScriptError: ... got <coroutine>); now refused when built, naming the
    right class. And the reverse."""
    window, slots = ratelua.Window(1, 5), ratelua.Slots(1, 5)
    client = redis.asyncio.Redis(host="127.0.0.1", port=1)  # never called
    refused(lambda: ratelua.SlidingWindow(client, window), -1, "client", "use ratelua.aio.SlidingWindow")
    refused(lambda: ratelua.Semaphore(client, slots), -1, "client", "use ratelua.aio.Semaphore")
    ratelua.aio.SlidingWindow(client, window)  # the right kind
    client = redis.Redis(host="127.0.0.1", port=1)
    refused(lambda: ratelua.aio.TokenBucket(client, ratelua.Bucket(1, 1, 1)), -1, "client", "use ratelua.TokenBucket")
    refused(lambda: ratelua.aio.Semaphore(client, slots), -1, "client", "use ratelua.Semaphore")
    ratelua.TokenBucket(client, ratelua.Bucket(1, 1, 1))

    class AsyncLike:
        async def execute_command(self, *args):
            pass

    refused(lambda: ratelua.ZSetLog(AsyncLike(), ratelua.Log(1, 5)), -1, "client", "is an asyncio client")
    ratelua.aio.ZSetLog(AsyncLike(), ratelua.Log(1, 5))


def test_async_cluster_client_is_refused_by_the_sync_limiter():
    cls = redis.asyncio.cluster.RedisCluster
    client = cls.__new__(cls)  # no connection: only its class matters
    refused(lambda: ratelua.AR1(client, ratelua.Decay(1, 2, 1)), -1, "client", "use ratelua.aio.AR1")
    sync_cls = redis.cluster.RedisCluster
    refused(lambda: ratelua.aio.AR1(sync_cls.__new__(sync_cls), ratelua.Decay(1, 2, 1)), -1, "client",
            "use ratelua.AR1")


@pytest.mark.parametrize("version", [4, 8, "5", 5.0, True, -1])
def test_unknown_version_is_refused(version):
    refused(lambda: ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), version=version), -1, "Version",
            "sliding_window has versions 5, 6, 7")
    refused(lambda: ratelua.Semaphore(NoClient(), ratelua.Slots(1, 5), version=version), -1, "Version",
            "concurrency has versions 5, 6, 7")


def test_default_version_is_7_and_5_and_6_can_be_pinned():
    for make in (lambda **o: ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), **o),
                 lambda **o: ratelua.aio.TokenBucket(NoClient(), ratelua.Bucket(1, 1, 1), **o),
                 lambda **o: ratelua.Semaphore(NoClient(), ratelua.Slots(1, 5), **o)):
        assert make().version == 7 and make(version=0).version == 7
        for version in (5, 6):
            pinned = make(version=version)
            assert pinned.version == version and str(pinned.script).endswith(f"@v{version}")
            assert pinned.script.sha1 != make().script.sha1


def test_unknown_option_is_refused():
    with pytest.raises(TypeError, match="keyPrefix"):
        ratelua.SlidingWindow(NoClient(), ratelua.Window(1, 5), keyPrefix="x")


def test_nan_is_not_a_count():
    refused(lambda: ratelua.SlidingWindow(NoClient(), ratelua.Window(math.nan, 5)), 0, "Max", "must be an integer")


@pytest.mark.parametrize("key", ["a\ud800", "\udcc3\udca9", "x\udfff y"])
def test_lone_surrogates_are_refused_not_collapsed(key):
    # '\udcc3\udca9' encoded with surrogateescape is the UTF-8 of 'é': it
    # would share 'é''s state key. Node refuses the same keys.
    with pytest.raises(ratelua.LimitError, match="eventKey.*lone surrogate"):
        ratelua.keys.event_key_bytes(key)
    assert ratelua.keys.event_key_bytes("é") == "é".encode()
    assert ratelua.keys.event_key_bytes(b"\xc3\xa9") == b"\xc3\xa9"
