"""Replay calls through ratelua_client for the conformance test.

    /usr/bin/python3 examples/python/conformance.py --addr HOST:PORT [--cluster] < calls.json

stdin is a JSON list of calls, each {"script": NAME, "version": N, "key":
KEY, "args": [ARGV...]}; they run in order through snippet.decide (the
README's snippet) and each prints one JSON line: the five integers of the
reply, or {"error": MESSAGE} with the server's message less a leading "ERR ".
"""

import argparse
import json
import logging
import sys

import redis
import redis.cluster

from snippet import decide


def connect(addr: str, cluster: bool):
    host, _, port = addr.rpartition(":")
    if cluster:
        return redis.cluster.RedisCluster(host=host, port=int(port))
    return redis.Redis(host=host, port=int(port))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--addr", required=True, help="HOST:PORT of the server or of one cluster node")
    parser.add_argument("--cluster", action="store_true", help="connect with redis.cluster.RedisCluster")
    opts = parser.parse_args()
    # redis-py 4.3's RedisCluster logs every error reply it passes on, the
    # NOSCRIPT that the fallback handles included, with a traceback.
    logging.getLogger("redis.cluster").addHandler(logging.NullHandler())
    calls = json.loads(sys.stdin.buffer.read())
    client = connect(opts.addr, opts.cluster)
    try:
        for c in calls:
            try:
                r = decide(client, c["script"], c["version"], c["key"], c["args"])
                line = [int(v) for v in r]
            except (redis.exceptions.RedisError, ValueError, LookupError) as e:
                msg = str(e)
                line = {"error": msg[4:] if msg.startswith("ERR ") else msg}
            print(json.dumps(line), flush=True)
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
