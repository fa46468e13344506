// The servers of the real-server tests, from the environment (the Go driver
// integration/lang_test.go starts them and sets these):
//   RATELUA_REDIS_ADDR, RATELUA_VALKEY_ADDR          host:port of a single node
//   RATELUA_REDIS_CLUSTER, RATELUA_VALKEY_CLUSTER    host:port,... of a cluster
// Without them the real-server tests fail under CI=true and skip otherwise.
import Redis from "ioredis";
import { createClient, createCluster } from "redis";

export const TARGETS = [
  ["redis-single", "RATELUA_REDIS_ADDR"],
  ["valkey-single", "RATELUA_VALKEY_ADDR"],
  ["redis-cluster", "RATELUA_REDIS_CLUSTER"],
  ["valkey-cluster", "RATELUA_VALKEY_CLUSTER"],
];

function addrs(variable) {
  return (process.env[variable] || "").split(",").map((a) => a.trim()).filter(Boolean).map((a) => {
    const i = a.lastIndexOf(":");
    return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
  });
}

/** eachTarget calls body(name, connect) for every target and client
 * library; a target missing from the environment fails under CI=true and
 * is skipped otherwise. connect() resolves to {client, close}. */
export function eachTarget(t, body) {
  return Promise.all(TARGETS.flatMap(([name, variable]) => ["ioredis", "node-redis"].map((lib) => {
    const list = addrs(variable);
    return t.test(`${name} ${lib}`, async (t) => {
      if (list.length === 0) {
        if (process.env.CI === "true") throw new Error(`no server: set ${variable}; under CI=true a missing server is a failure`);
        t.skip(`no server: set ${variable} (integration/lang_test.go does)`);
        return;
      }
      const { client, close } = await connect(lib, name.endsWith("cluster"), list);
      try {
        await body(t, client, { name, lib });
      } finally {
        await close();
      }
    });
  })));
}

export async function connect(lib, cluster, list) {
  if (lib === "ioredis") {
    const client = cluster ? new Redis.Cluster(list) : new Redis(list[0]);
    return { client, close: () => client.quit() };
  }
  const client = cluster
    ? createCluster({ rootNodes: list.map((a) => ({ url: `redis://${a.host}:${a.port}` })) })
    : createClient({ url: `redis://${list[0].host}:${list[0].port}` });
  await client.connect();
  return { client, close: () => client.close ? client.close() : client.quit() };
}
