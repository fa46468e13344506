import redis
from ratelua_client import Manifest

scripts = Manifest()  # lua/manifest.json: each script's name, version, SHA1 and exact bytes


def decide(client: redis.Redis, name: str, version: int, key: str, args: list):
    """One call; client may be a redis.cluster.RedisCluster too; args is the ARGV."""
    script = scripts.get(name, version)
    if int(args[0]) < 0:
        return script.reset(client, key, args)  # eventCount -1: delete the state
    return script.call(client, key, args)  # EVALSHA, and EVAL once on NOSCRIPT
