// Call the ratelua scripts from Node with ioredis (Redis or Cluster), by
// EVALSHA with the SHA1s of lua/manifest.json.
//
// A script touches exactly one key, KEYS[1], so a Cluster client routes each
// call by that key alone. On NOSCRIPT (a node that never saw the script, a
// restart, a failover, SCRIPT FLUSH) the call is sent once more as EVAL of
// the file's exact bytes, which loads the script on the node that owns the
// key.
"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");

const DEFAULT_MANIFEST = path.join(__dirname, "..", "..", "lua", "manifest.json");

// result decodes the five integers every script answers (times in the
// call's unit).
function result(reply) {
  if (!Array.isArray(reply) || reply.length !== 5 || !reply.every(Number.isInteger)) {
    throw new Error(`ratelua: a reply of five integers expected, got ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, retryAfter, resetAfter, limitIndex] = reply;
  return {
    allowed: allowed === 1, // every limit admits the events
    remaining, // events that would still be admitted now
    retryAfter, // 0 when allowed; the wait until the same call passes; -1 never
    resetAfter, // the time until the state is fresh again (its TTL)
    limitIndex, // 1-based limit that decided; 0 after a reset
  };
}

// Script is one released script version: its SHA1 and the file's exact bytes.
class Script {
  constructor(name, version, sha1, source) {
    if (crypto.createHash("sha1").update(source).digest("hex") !== sha1) {
      throw new Error(`ratelua: ${name} v${version}: the file's SHA1 is not the manifest's ${sha1}`);
    }
    Object.assign(this, { name, version, sha1, source });
  }

  // call: EVALSHA sha1 1 key ...args; on NOSCRIPT, EVAL the source and so load it there (once).
  async call(client, key, args) {
    const argv = args.map(String);
    let reply;
    try {
      reply = await client.evalsha(this.sha1, 1, key, ...argv);
    } catch (err) {
      if (!String(err && err.message).startsWith("NOSCRIPT")) throw err;
      reply = await client.eval(this.source, 1, key, ...argv);
    }
    return result(reply);
  }

  // reset deletes the state of key: the call with eventCount -1 and the limiter's other arguments.
  async reset(client, key, args) {
    return this.call(client, key, ["-1", ...args.slice(1)]);
  }
}

// Manifest holds the scripts of lua/manifest.json, by name and version.
class Manifest {
  constructor(file = DEFAULT_MANIFEST) {
    const manifest = JSON.parse(fs.readFileSync(file, "utf8"));
    this.scripts = new Map();
    for (const s of manifest.scripts) {
      const source = fs.readFileSync(path.join(path.dirname(file), s.file)); // a Buffer: the exact bytes
      this.scripts.set(`${s.name}@${s.version}`, new Script(s.name, s.version, s.sha1, source));
    }
  }

  // get returns the script name at version, or its latest version when version is 0.
  get(name, version = 0) {
    if (!version) {
      for (const s of this.scripts.values()) if (s.name === name) version = Math.max(version, s.version);
    }
    const script = this.scripts.get(`${name}@${Number(version)}`);
    if (!script) throw new Error(`ratelua: no script ${name} v${version} in the manifest`);
    return script;
  }
}

module.exports = { Manifest, Script, result, DEFAULT_MANIFEST };
