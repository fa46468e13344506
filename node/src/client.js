// The two clients: ioredis (Redis, Cluster) and node-redis (createClient,
// createCluster), behind one small shape.
import { librarySource } from "./scripts.js";

/** adapt returns {call(command, target, key, args), loadLibrary(script)}. */
export function adapt(client) {
  if (client && typeof client.evalSha === "function") return nodeRedis(client);
  if (client && typeof client.evalsha === "function" && typeof client.call === "function") return ioredis(client);
  throw new TypeError("ratelua: the client must be an ioredis Redis or Cluster, or a node-redis client or cluster");
}

function ioredis(client) {
  return {
    call(command, target, key, args) {
      return client.call(command, target, 1, key, ...args);
    },
    async loadLibrary(script) {
      const code = librarySource(script);
      const nodes = typeof client.nodes === "function" && client.isCluster ? client.nodes("master") : [client];
      await Promise.all(nodes.map((n) => n.call("FUNCTION", "LOAD", "REPLACE", code)));
    },
  };
}

function nodeRedis(client) {
  const methods = { EVALSHA: "evalSha", EVAL: "eval", FCALL: "fCall" };
  return {
    call(command, target, key, args) {
      return client[methods[command]](target, { keys: [key], arguments: args });
    },
    async loadLibrary(script) {
      const code = librarySource(script);
      if (Array.isArray(client.masters)) {
        await Promise.all(client.masters.map(async (m) => (await client.nodeClient(m)).functionLoad(code, { REPLACE: true })));
      } else {
        await client.functionLoad(code, { REPLACE: true });
      }
    },
  };
}
