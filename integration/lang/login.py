"""The login case (1 attempt per 5 s AND 5 per hour per address) with the
installed ratelua package, as the README shows it:

    python login.py HOST:PORT PREFIX ADDRESS

Two attempts: prints one JSON line per decision and where ratelua was
imported from."""

import json
import sys

import redis

import ratelua

host, port = sys.argv[1].rsplit(":", 1)
logins = ratelua.SlidingWindow(
    redis.Redis(host=host, port=int(port)),
    ratelua.Window(1, 5, 1),  # 1 per 5 s, in 1 s buckets
    ratelua.Window(5, 3600, 600),  # 5 per hour, in 10 min buckets
    prefix=sys.argv[2],
)
for _ in range(2):
    r = logins.allow(sys.argv[3])
    print(json.dumps({"allowed": r.allowed, "remaining": r.remaining, "retry_after": r.retry_after,
                      "limit": r.limit, "module": ratelua.__file__}))
