"""Call the ratelua scripts from Python with redis-py (redis.Redis or
redis.cluster.RedisCluster), by EVALSHA with the SHA1s of lua/manifest.json.

A script touches exactly one key, KEYS[1], so a cluster client routes each
call by that key alone. On NOSCRIPT (a node that never saw the script, a
restart, a failover, SCRIPT FLUSH) the call is sent once more as EVAL of the
file's exact bytes, which loads the script on the node that owns the key.
"""

import hashlib
import json
import os
from typing import NamedTuple

import redis

DEFAULT_MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lua", "manifest.json")


class Result(NamedTuple):
    """The five integers every script answers (times in the call's unit)."""

    allowed: bool  # every limit admits the events
    remaining: int  # events that would still be admitted now
    retry_after: int  # 0 when allowed; the wait until the same call passes; -1 never
    reset_after: int  # the time until the state is fresh again (its TTL)
    limit_index: int  # 1-based limit that decided; 0 after a reset

    @classmethod
    def of(cls, reply) -> "Result":
        if not isinstance(reply, list) or len(reply) != 5:
            raise ValueError(f"ratelua: a reply of five integers expected, got {reply!r}")
        allowed, remaining, retry_after, reset_after, limit_index = (int(v) for v in reply)
        return cls(allowed == 1, remaining, retry_after, reset_after, limit_index)


class Script:
    """One released script version: its SHA1 and the file's exact bytes."""

    def __init__(self, name: str, version: int, sha1: str, source: bytes):
        if hashlib.sha1(source).hexdigest() != sha1:
            raise ValueError(f"ratelua: {name} v{version}: the file's SHA1 is not the manifest's {sha1}")
        self.name, self.version, self.sha1, self.source = name, version, sha1, source

    def call(self, client, key: str, args) -> Result:
        """EVALSHA sha1 1 key *args; on NOSCRIPT, EVAL the source and so load it there (once)."""
        argv = [a if isinstance(a, (bytes, str)) else str(int(a)) for a in args]
        try:
            reply = client.evalsha(self.sha1, 1, key, *argv)
        except redis.exceptions.NoScriptError:
            reply = client.eval(self.source, 1, key, *argv)
        return Result.of(reply)

    def reset(self, client, key: str, args) -> Result:
        """Delete the state of key: the call with eventCount -1 and the limiter's other arguments."""
        return self.call(client, key, ["-1", *list(args)[1:]])


class Manifest:
    """The scripts of lua/manifest.json, by name and version."""

    def __init__(self, path: str = DEFAULT_MANIFEST):
        with open(path, "rb") as f:
            manifest = json.load(f)
        folder = os.path.dirname(os.path.abspath(path))
        self.scripts = {}
        for s in manifest["scripts"]:
            with open(os.path.join(folder, s["file"]), "rb") as f:
                source = f.read()
            self.scripts[(s["name"], s["version"])] = Script(s["name"], s["version"], s["sha1"], source)

    def get(self, name: str, version: int = 0) -> Script:
        """The script name at version, or its latest version when version is 0."""
        if not version:
            version = max((v for (n, v) in self.scripts if n == name), default=0)
        script = self.scripts.get((name, int(version)))
        if script is None:
            raise LookupError(f"ratelua: no script {name} v{version} in the manifest")
        return script
