"""Every key vector of the Go API (testdata/keyvectors.json): the same state
key and ARGV, or the same refused limit and field. No server needed."""

import functools
import json
import os
from datetime import datetime, timedelta, timezone

import pytest

import ratelua

VECTORS = os.environ.get("RATELUA_KEYVECTORS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "keyvectors.json")

KINDS = {
    "sliding_window": (ratelua.SlidingWindow, lambda m: ratelua.Window(m["max"], us(m["duration_us"]), us(m["resolution_us"]))),
    "token_bucket": (ratelua.TokenBucket, lambda m: ratelua.Bucket(m["capacity"], m["refill_amount"], us(m["refill_interval_us"]))),
    "zset_log": (ratelua.ZSetLog, lambda m: ratelua.Log(m["max"], us(m["window_us"]))),
    "ar1": (ratelua.AR1, lambda m: ratelua.Decay(m["max"], m["factor"], us(m["resolution_us"]))),
    "concurrency": (ratelua.Semaphore, lambda m: ratelua.Slots(m["max"], us(m["lease_us"]))),
}


def us(n):
    return timedelta(microseconds=n)


@functools.lru_cache(maxsize=None)
def load():
    with open(VECTORS, encoding="utf-8") as f:
        return json.load(f)["vectors"]


class NoClient:
    """Never called: the vectors need no server."""


def build(v):
    cls, limit = KINDS[v["script"]]
    now = datetime(1970, 1, 1, tzinfo=timezone.utc) + us(v["now_us"])
    if cls is ratelua.Semaphore:
        assert not v["count_denied"], "a semaphore does not count denied acquires"
        return cls(NoClient(), *[limit(m) for m in v["limits"]], prefix=v["prefix"], clock=lambda: now,
                   version=v.get("version"))
    return cls(NoClient(), *[limit(m) for m in v["limits"]], prefix=v["prefix"],
               count_denied=v["count_denied"], clock=lambda: now, version=v.get("version"))


def test_vectors_cover_every_script():
    vectors = load()
    assert {v["script"] for v in vectors} == set(KINDS)
    assert max(len(v["limits"]) for v in vectors) == 16
    assert max(len(v["event_key_hex"]) // 2 for v in vectors) >= 400
    pinned = {(v["script"], v["version"]) for v in vectors if v.get("version")}
    assert pinned == {(s, n) for s in KINDS for n in (5, 6, 7)}, "every script pinned at every version"


def test_default_is_the_newest_version():
    """A limiter without a version calls the newest script and names the
    same key as one pinned to it (Go's default too: the vectors without a
    version are the Go API's defaults)."""
    for v in load():
        if not v.get("version") or v.get("error"):
            continue
        pinned = build(v)
        default = build({**v, "version": None})
        event_key = bytes.fromhex(v["event_key_hex"])
        newest = max(n for (s, n) in ratelua.scripts.SCRIPTS if s == v["script"])
        assert default.version == newest
        if v["version"] == newest:
            assert default.key(event_key) == pinned.key(event_key)
        elif pinned.script.state_version != default.script.state_version:
            assert default.key(event_key) != pinned.key(event_key)
            assert f":v{pinned.script.state_version}:".encode() in pinned.key(event_key)


@pytest.mark.parametrize("i", range(len(load())))
def test_vector(i):
    v = load()[i]
    if v.get("error"):
        with pytest.raises(ratelua.LimitError) as info:
            build(v)
        assert (info.value.index, info.value.field) == (v["error"]["index"], v["error"]["field"]), str(info.value)
        return
    limiter = build(v)
    event_key = bytes.fromhex(v["event_key_hex"])
    assert limiter.key(event_key).hex() == v["key_hex"]
    assert limiter.args(v["n"]) == v["args"]
    try:
        as_text = event_key.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert limiter.key(as_text).hex() == v["key_hex"], "a str event key is its UTF-8 bytes"
