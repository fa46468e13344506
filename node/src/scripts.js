// The scripts this package carries (the newest version of each, copied from
// the repository's lua/ by make generate), by name.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const folder = new URL("../lua/", import.meta.url);

function load() {
  const manifest = JSON.parse(readFileSync(new URL("manifest.json", folder), "utf8"));
  const scripts = new Map();
  for (const s of manifest.scripts) {
    const source = readFileSync(new URL(s.file, folder));
    if (createHash("sha1").update(source).digest("hex") !== s.sha1) {
      throw new Error(`ratelua: ${s.file}: its SHA1 is not the manifest's ${s.sha1}`);
    }
    scripts.set(s.name, {
      name: s.name, version: s.version, stateVersion: s.state_version ?? s.version, sha1: s.sha1,
      source: source.toString("utf8"), function: s.function, library: s.library,
      toString() { return `${this.name}@v${this.version}`; },
    });
  }
  return scripts;
}

/** SCRIPTS maps each script name to its newest version. */
export const SCRIPTS = load();

/** librarySource is the Functions library that registers script's function. */
export function librarySource(script) {
  return readFileSync(new URL(script.library, folder), "utf8");
}
