"""A Python instance of the cross-language tests (integration/lang_test.go):
reads one JSON command per line on stdin, answers one JSON line on stdout.

  python3 worker.py single HOST:PORT | cluster HOST:PORT,...

Commands:
  {"op": "call", "script", "limits" (as in testdata/keyvectors.json), "prefix",
   "count_denied", "key_hex", "n", "now_us" (null: the server's clock)}
      -> {"allowed", "remaining", "retry_after_us", "reset_after_us", "limit"}
  {"op": "reserve", ... as call without n, "estimate", "lifetime_us"}
      -> the reply of call and "id": the reservation's id, drawn by the package
  {"op": "settle", ... as call without n, "id", "actual"}
      -> the reply of call and "applied": a settle of reservation id, reserved
      by any process, through Limiter.reservation
  {"op": "burst", ... as call without n and now_us, "count"}
      -> {"admitted"}: count calls of one event each, in a row
  {"op": "hold", "slots": {"max", "lease_us"}, "prefix", "key_hex", "counter_hex",
   "rounds", "hold_ms"} -> {"acquired", "denied", "peak"}: rounds acquires on
      the semaphore (the server's clock); each lease held INCRs counter_hex,
      sleeps hold_ms, DECRs it, releases and pauses hold_ms / 2 (a denied
      acquire retries after hold_ms / 10); peak is the highest INCR seen
  {"op": "http", "limits", "prefix", "requests": [{"at_us", "xff"}]}
      -> {"responses": [{"status", "headers", "body"}]}: the login case behind
      the ASGI middleware (trusting the peer 127.0.0.1)
"""

import asyncio
import json
import sys
from datetime import datetime, timedelta, timezone

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

import ratelua
import ratelua.aio
from ratelua.asgi import Limit, RateLimitMiddleware

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def us(n):
    return timedelta(microseconds=n)


KINDS = {
    "sliding_window": ("SlidingWindow", lambda m: ratelua.Window(m["max"], us(m["duration_us"]), us(m["resolution_us"]))),
    "token_bucket": ("TokenBucket", lambda m: ratelua.Bucket(m["capacity"], m["refill_amount"], us(m["refill_interval_us"]))),
    "zset_log": ("ZSetLog", lambda m: ratelua.Log(m["max"], us(m["window_us"]))),
    "ar1": ("AR1", lambda m: ratelua.Decay(m["max"], m["factor"], us(m["resolution_us"]))),
}


class Clock:
    def __init__(self):
        self.now_us = None

    def __call__(self):
        return EPOCH + us(self.now_us)


def main():
    topology, addrs = sys.argv[1], [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in sys.argv[2].split(",")]
    if topology == "cluster":
        client = redis.cluster.RedisCluster(startup_nodes=[redis.cluster.ClusterNode(h, p) for h, p in addrs])
    else:
        client = redis.Redis(host=addrs[0][0], port=addrs[0][1])
    clock, limiters = Clock(), {}

    def limiter(cmd, clocked):
        name, limit = KINDS[cmd["script"]]
        cache = (json.dumps([cmd["script"], cmd["limits"], cmd["prefix"], cmd.get("count_denied", False),
                             cmd.get("version")]), clocked)
        if cache not in limiters:
            limiters[cache] = getattr(ratelua, name)(client, *[limit(m) for m in cmd["limits"]], prefix=cmd["prefix"],
                                                      count_denied=cmd.get("count_denied", False),
                                                      clock=clock if clocked else None, version=cmd.get("version"))
        return limiters[cache]

    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "call":
                clock.now_us = cmd["now_us"]
                l = limiter(cmd, cmd["now_us"] is not None)
                key = bytes.fromhex(cmd["key_hex"])
                if cmd["n"] < 0:
                    l.reset(key)
                    out = {"reset": True}
                else:
                    r = l.allow_n(key, cmd["n"]) if cmd["n"] > 0 else l.peek(key)
                    out = {"allowed": r.allowed, "remaining": r.remaining, "retry_after_us": r.retry_after_us,
                           "reset_after_us": r.reset_after_us, "limit": r.limit}
            elif cmd["op"] in ("reserve", "settle"):
                clock.now_us = cmd["now_us"]
                l = limiter(cmd, True)
                key = bytes.fromhex(cmd["key_hex"])
                if cmd["op"] == "reserve":
                    res = l.reserve(key, cmd["estimate"], lifetime=us(cmd["lifetime_us"]))
                    r, extra = res.result, {"id": res.id}
                else:
                    s = l.reservation(key, cmd["id"]).settle(cmd["actual"])
                    r, extra = s.result, {"applied": s.applied}
                out = {"allowed": r.allowed, "remaining": r.remaining, "retry_after_us": r.retry_after_us,
                       "reset_after_us": r.reset_after_us, "limit": r.limit, **extra}
            elif cmd["op"] == "burst":
                l = limiter(cmd, False)
                key = bytes.fromhex(cmd["key_hex"])
                out = {"admitted": sum(l.allow(key).allowed for _ in range(cmd["count"]))}
            elif cmd["op"] == "hold":
                out = hold(client, cmd)
            elif cmd["op"] == "http":
                out = {"responses": asyncio.run(http(cmd, addrs, topology))}
            else:
                out = {"error": f"unknown op {cmd['op']!r}"}
        except Exception as err:  # reported to the driver, which fails
            out = {"error": f"{type(err).__name__}: {err}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def hold(client, cmd):
    import time

    sem = ratelua.Semaphore(client, ratelua.Slots(cmd["slots"]["max"], us(cmd["slots"]["lease_us"])), prefix=cmd["prefix"])
    key, counter = bytes.fromhex(cmd["key_hex"]), bytes.fromhex(cmd["counter_hex"])
    acquired = denied = peak = 0
    for _ in range(cmd["rounds"]):
        lease, _ = sem.acquire(key)
        if lease is None:
            denied += 1
            time.sleep(cmd["hold_ms"] / 10000)
            continue
        acquired += 1
        peak = max(peak, client.incr(counter))
        time.sleep(cmd["hold_ms"] / 1000)
        client.decr(counter)
        lease.release()
        time.sleep(cmd["hold_ms"] / 2000)  # a turn for the others
    return {"acquired": acquired, "denied": denied, "peak": peak}


async def http(cmd, addrs, topology):
    if topology == "cluster":
        client = redis.asyncio.cluster.RedisCluster(startup_nodes=[redis.asyncio.cluster.ClusterNode(h, p) for h, p in addrs])
    else:
        client = redis.asyncio.Redis(host=addrs[0][0], port=addrs[0][1])
    clock = Clock()
    name, limit = KINDS["sliding_window"]
    logins = ratelua.aio.SlidingWindow(client, *[limit(m) for m in cmd["limits"]], prefix=cmd["prefix"], clock=clock)

    async def ok(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})

    app = RateLimitMiddleware(ok, Limit(logins, name="login"), trusted_proxies=["127.0.0.1"])
    responses = []
    for req in cmd["requests"]:
        clock.now_us = req["at_us"]
        sent = []

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": "POST", "path": "/login", "client": ("127.0.0.1", 40000),
                 "headers": [(b"x-forwarded-for", req["xff"].encode())]}
        await app(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        headers = {}
        for k, v in start["headers"]:
            headers[k.decode().lower()] = v.decode()
        responses.append({"status": start["status"], "headers": headers, "body": body.decode()})
    await client.close()
    return responses


if __name__ == "__main__":
    main()
