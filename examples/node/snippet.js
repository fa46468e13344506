const { Manifest } = require("./ratelua-client");

const scripts = new Manifest(); // lua/manifest.json: each script's name, version, SHA1 and exact bytes

// One call; client is an ioredis Redis or Cluster; args is the ARGV. Resolves to
// {allowed, remaining, retryAfter, resetAfter, limitIndex}.
async function decide(client, name, version, key, args) {
  const script = scripts.get(name, version);
  if (Number(args[0]) < 0) return script.reset(client, key, args); // eventCount -1: delete the state
  return script.call(client, key, args); // EVALSHA, and EVAL once on NOSCRIPT
}

module.exports = { decide };
