"""Reserve, then settle (token_bucket v7) on real servers: single nodes and
six-node clusters of redis-server and valkey-server (see conftest.py); the
checks made before any round trip need no server.

The bucket of these tests holds 10 tokens refilled 10 per minute (one per
6 s) and the caller's clock stands still unless a test moves it, so every
number below follows from lua/README.md's contract."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest
import redis.exceptions

import ratelua
import ratelua.aio
from ratelua.reservation import reserves

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


class Clock:
    def __init__(self):
        self.t = T0

    def __call__(self):
        return self.t


def fresh():
    return "api-key-" + uuid.uuid4().hex + "-{é}%"


def bucket(client, clock, cls=ratelua.TokenBucket, **options):
    return cls(client, ratelua.Bucket(10, 10, 60), prefix="llm", clock=clock, **options)


def test_reserve_then_settle_refunds_what_was_not_used(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    r = tpm.reserve(who, 6)
    assert r.allowed and r.result.remaining == 4 and r.result.limit == 0
    assert 1 <= r.id <= 2 ** 52 and r.estimate == 6
    assert client.type(tpm.key(who)) == b"hash", "an open reservation makes the Go API's key a hash"
    s = r.settle(2)
    assert s.applied and s.result.allowed and s.result.remaining == 8 and s.result.limit == 0, s
    assert client.type(tpm.key(who)) == b"string", "the last settle writes v6's string again"
    assert r.settle(2) is s and r.settled, "a settle answered is not sent again"
    # The same id settled again (a retry from another process): applies nothing.
    again = tpm.reservation(who, r.id).settle(2)
    assert not again.applied and again.result.remaining == 8
    assert again.result.limit == -1 and again.result.never and not again.result.allowed
    assert tpm.peek(who).remaining == 8


def test_an_overrun_is_charged_never_denied_and_later_calls_wait(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    r = tpm.reserve(who, 5)
    assert r.allowed and r.result.remaining == 5
    s = r.settle(12)
    # 10 - 12 = -2 tokens: one token is 3 refills of 6 s away.
    assert s.applied and not s.result.allowed and s.result.remaining == 0
    assert s.result.retry_after_us == 18_000_000, s
    denied = tpm.allow(who)
    assert not denied.allowed and denied.retry_after_us == 18_000_000
    clock.t += timedelta(seconds=18)
    assert tpm.allow(who).allowed, "the debt paid off, a call passes"


def test_cancel_gives_the_whole_estimate_back(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    r = tpm.reserve(who, 4)
    assert r.result.remaining == 6
    s = r.cancel()
    assert s.applied and s.result.remaining == 10
    assert r.cancel() is s


def test_a_denied_reserve_holds_nothing_and_its_settle_sends_nothing(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    held = tpm.reserve(who, 8)
    denied = tpm.reserve(who, 5)
    assert not denied.allowed and denied.result.remaining == 2 and denied.result.retry_after_us == 18_000_000
    assert denied.settle(0) is None and denied.cancel() is None
    assert tpm.peek(who).remaining == 2
    never = tpm.reserve(who, 11)
    assert not never.allowed and never.result.never
    assert held.settle(8).result.remaining == 2


def test_a_reservation_past_its_lifetime_is_not_settled(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    r = tpm.reserve(who, 6, lifetime=timedelta(seconds=1))
    clock.t += timedelta(seconds=1)
    s = r.cancel()
    assert not s.applied, "a settle at the reserve's now + lifetime finds nothing"
    assert s.result.remaining == 4, "the estimate stays spent (no refill in 1 s)"


def test_a_reservation_never_settled_stays_spent(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    tpm.reserve(who, 7)
    assert tpm.peek(who).remaining == 3
    clock.t += timedelta(seconds=12)
    assert tpm.peek(who).remaining == 3, "held: the bucket refills to capacity - 7 until the reservation ends"
    clock.t += ratelua.DEFAULT_LIFETIME
    assert tpm.peek(who).remaining == 5, "expired unsettled: its tokens stay spent and refill from its expiry"


class LoseFirst:
    """A client whose first settle is lost: before it reaches the server
    (lost_reply False) or after the server applied it (True)."""

    def __init__(self, client, lost_reply):
        self.client, self.lost_reply, self.settles = client, lost_reply, 0

    def _call(self, method, *args):
        settle = len(args) > 6 and str(args[6]).startswith("settle:")  # (sha1, 1, key, n, unit, now, mode...)
        if settle:
            self.settles += 1
            if self.settles == 1:
                if self.lost_reply:
                    getattr(self.client, method)(*args)
                raise redis.exceptions.ConnectionError("connection reset (planted)")
        return getattr(self.client, method)(*args)

    def evalsha(self, *args):
        return self._call("evalsha", *args)

    def eval(self, *args):
        return self._call("eval", *args)


@pytest.mark.parametrize("lost_reply", [False, True], ids=["lost-request", "lost-reply"])
def test_a_settle_retried_applies_once(client, lost_reply):
    clock, who = Clock(), fresh()
    flaky = LoseFirst(client, lost_reply)
    tpm = bucket(flaky, clock, fail_open=True)
    r = tpm.reserve(who, 6)
    assert r.result.remaining == 4
    with pytest.raises(ratelua.UnavailableError):
        r.settle(1)  # even under fail_open: the caller retries
    assert not r.settled
    with pytest.raises(ratelua.LimitError, match="retry with 1"):
        r.settle(2)
    s = r.settle(1)
    assert flaky.settles == 2
    # Sent once or twice, the refund of 5 is applied once.
    assert s.applied is not lost_reply and s.result.remaining == 9, s
    assert tpm.peek(who).remaining == 9


def test_a_reservation_made_elsewhere_is_settled_by_its_id(client):
    clock, who = Clock(), fresh()
    gateway, worker = bucket(client, clock), bucket(client, clock)
    r = gateway.reserve(who, 9)
    s = worker.reservation(who, r.id).settle(3)
    assert s.applied and s.result.remaining == 7
    assert not gateway.reservation(who, r.id).cancel().applied


def test_a_reserve_retried_with_its_id_records_once(client):
    clock, who = Clock(), fresh()
    tpm = bucket(client, clock)
    rid = ratelua.reservation_id()
    first = tpm.reserve(who, 3, id=rid)
    again = tpm.reserve(who, 3, id=rid)
    assert first.result.remaining == 7 and again.allowed and again.result.remaining == 7
    assert again.cancel().result.remaining == 10


async def test_asyncio_reserve_settle_cancel(aclient):
    clock, who = Clock(), fresh()
    tpm = bucket(aclient, clock, cls=ratelua.aio.TokenBucket)
    r = await tpm.reserve(who, 6)
    assert r.allowed and r.result.remaining == 4
    s = await r.settle(2)
    assert s.applied and s.result.remaining == 8
    assert await r.settle(2) is s
    assert not (await tpm.reservation(who, r.id).cancel()).applied
    over = await tpm.reserve(who, 8)
    assert (await over.settle(10)).result.remaining == 0
    c = await (await tpm.reserve(who, 1)).cancel()
    assert c is None, "denied: nothing to cancel"


# Checked before any round trip: no server needed.


class NoServer:
    """A client that fails the test when the limiter calls it."""

    execute_command = None  # neither sync nor asyncio: not refused when built

    def __getattr__(self, name):
        raise AssertionError(f"the limiter called the server ({name}) for a call it must refuse")


@pytest.mark.parametrize("make", [
    lambda c: ratelua.SlidingWindow(c, ratelua.Window(3, 60, 1), version=6),
    lambda c: ratelua.ZSetLog(c, ratelua.Log(3, 60), version=6),
    lambda c: ratelua.AR1(c, ratelua.Decay(3, 2, 60)),
    lambda c: ratelua.TokenBucket(c, ratelua.Bucket(3, 1, 60), version=6),
    lambda c: ratelua.TokenBucket(c, ratelua.Bucket(3, 1, 60), version=5),
], ids=["sliding_window-v6", "zset_log-v6", "ar1", "token_bucket-v6", "token_bucket-v5"])
def test_a_script_without_the_modes_is_refused_before_any_call(make):
    l = make(NoServer())
    if l.reserves:
        pytest.fail(f"{l.script} takes the modes now: move it to the real-server tests")
    with pytest.raises(ratelua.NotSupportedError, match=f"{l.script} does not support reserve"):
        l.reserve("k", 1)
    with pytest.raises(ratelua.NotSupportedError, match="does not support settle"):
        l.reservation("k", 1)


def test_which_scripts_take_the_modes_follows_the_manifest():
    from ratelua.scripts import SCRIPTS
    taking = sorted(str(s) for s in SCRIPTS.values() if reserves(s))
    assert "token_bucket@v7" in taking
    assert "sliding_window@v7" in taking
    assert all(s.endswith("@v7") for s in taking), taking


@pytest.mark.parametrize("call, field", [
    (lambda l: l.reserve("k", 0), "estimate"),
    (lambda l: l.reserve("k", 2 ** 52 + 1), "estimate"),
    (lambda l: l.reserve("k", 1.5), "estimate"),
    (lambda l: l.reserve("k", True), "estimate"),
    (lambda l: l.reserve("k", 1, lifetime=0), "lifetime"),
    (lambda l: l.reserve("k", 1, lifetime=-1), "lifetime"),
    (lambda l: l.reserve("k", 1, lifetime="5m"), "lifetime"),
    (lambda l: l.reserve("k", 1, id=0), "id"),
    (lambda l: l.reserve("k", 1, id=2 ** 52 + 1), "id"),
    (lambda l: l.reservation("k", "7"), "id"),
    (lambda l: l.reservation("k", 7).settle(-1), "actual"),
    (lambda l: l.reservation("k", 7).settle(2 ** 52 + 1), "actual"),
    (lambda l: l.reservation("k", 7).settle(0.5), "actual"),
])
def test_bad_input_is_refused_naming_it(call, field):
    l = ratelua.TokenBucket(NoServer(), ratelua.Bucket(3, 1, 60))
    with pytest.raises(ratelua.LimitError) as err:
        call(l)
    assert err.value.field == field


def test_the_arguments_are_the_contracts():
    clock = Clock()
    l = ratelua.TokenBucket(NoServer(), ratelua.Bucket(10, 10, 60), clock=clock)
    rid, key, args = l.reserve_call("k", 6, timedelta(seconds=120), 41)
    now = str(int(T0.timestamp() * 1000))
    assert args == ["6", "ms", now, "reserve:41:120000", "10", "10", "60000"]
    assert key == l.key("k")
    # A lifetime is rounded up to the unit, and the default is 5 minutes.
    assert l.reserve_call("k", 1, 0.0005, 1)[2][3] == "reserve:1:1"
    assert l.reserve_call("k", 1, None, 1)[2][3] == "reserve:1:300000"
    # In microseconds (a limit of 1.5 ms), and count_denied does not apply.
    us = ratelua.TokenBucket(NoServer(), ratelua.Bucket(10, 1, 0.0015), count_denied=True)
    assert us.reserve_call("k", 1, 0.0005, 2)[2][1:4] == ["us", "", "reserve:2:500"]
    assert us.args(1)[3] == "1"
