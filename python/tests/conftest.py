"""The servers of the real-server tests, from the environment (the Go
driver integration/lang_test.go starts them and sets these):

  RATELUA_REDIS_ADDR, RATELUA_VALKEY_ADDR          host:port of a single node
  RATELUA_REDIS_CLUSTER, RATELUA_VALKEY_CLUSTER    host:port,... of a cluster

Without them the real-server tests fail under CI=true and skip otherwise.
"""

import os

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

TARGETS = [
    ("redis-single", "RATELUA_REDIS_ADDR"),
    ("valkey-single", "RATELUA_VALKEY_ADDR"),
    ("redis-cluster", "RATELUA_REDIS_CLUSTER"),
    ("valkey-cluster", "RATELUA_VALKEY_CLUSTER"),
]


def _addrs(var):
    out = []
    for a in os.environ.get(var, "").split(","):
        if a.strip():
            host, _, port = a.strip().rpartition(":")
            out.append((host, int(port)))
    return out


def _missing(var):
    message = f"no server: set {var} (integration/lang_test.go does)"
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; under CI=true a missing server is a failure")
    pytest.skip(message)


@pytest.fixture(params=[t[0] for t in TARGETS])
def target(request):
    """(name, addresses) of each server the environment names."""
    var = dict(TARGETS)[request.param]
    addrs = _addrs(var)
    if not addrs:
        _missing(var)
    return request.param, addrs


def sync_client(target):
    name, addrs = target
    if name.endswith("cluster"):
        return redis.cluster.RedisCluster(startup_nodes=[redis.cluster.ClusterNode(h, p) for h, p in addrs])
    return redis.Redis(host=addrs[0][0], port=addrs[0][1])


def async_client(target):
    name, addrs = target
    if name.endswith("cluster"):
        return redis.asyncio.cluster.RedisCluster(
            startup_nodes=[redis.asyncio.cluster.ClusterNode(h, p) for h, p in addrs])
    return redis.asyncio.Redis(host=addrs[0][0], port=addrs[0][1])


@pytest.fixture
def client(target):
    c = sync_client(target)
    yield c
    c.close()


@pytest.fixture
async def aclient(target):
    c = async_client(target)
    yield c
    await c.close()
