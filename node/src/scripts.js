// The scripts this package carries (every released version, copied from the
// repository's lua/ by make generate), by name and version. The newest
// version of each script is the default; an older one can be pinned with a
// limiter's version option, as Go's Options.Version.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { LimitError } from "./errors.js";

const folder = new URL("../lua/", import.meta.url);

function load() {
  const manifest = JSON.parse(readFileSync(new URL("manifest.json", folder), "utf8"));
  const scripts = new Map();
  for (const s of manifest.scripts) {
    const source = readFileSync(new URL(s.file, folder));
    if (createHash("sha1").update(source).digest("hex") !== s.sha1) {
      throw new Error(`ratelua: ${s.file}: its SHA1 is not the manifest's ${s.sha1}`);
    }
    scripts.set(`${s.name}@v${s.version}`, {
      name: s.name, version: s.version, stateVersion: s.state_version ?? s.version, sha1: s.sha1,
      source: source.toString("utf8"), function: s.function, library: s.library, argv: s.argv ?? [],
      toString() { return `${this.name}@v${this.version}`; },
    });
  }
  return scripts;
}

/** SCRIPTS maps "name@vN" to each script version the package carries. */
export const SCRIPTS = load();

/** versions lists the versions of script name, oldest first. */
export function versions(name) {
  return [...SCRIPTS.values()].filter((s) => s.name === name).map((s) => s.version).sort((a, b) => a - b);
}

/** lookup returns script name at version; undefined, null or 0 is the
 * newest. A version the package does not carry is a LimitError naming the
 * field Version. */
export function lookup(name, version) {
  const known = versions(name);
  if (version === undefined || version === null || version === 0) return SCRIPTS.get(`${name}@v${known[known.length - 1]}`);
  if (!Number.isInteger(version) || !known.includes(version)) {
    throw new LimitError(-1, "Version", `${name} has versions ${known.join(", ")} (undefined: the newest), got ${typeof version === "string" ? JSON.stringify(version) : String(version)}`);
  }
  return SCRIPTS.get(`${name}@v${version}`);
}

/** librarySource is the Functions library that registers script's function. */
export function librarySource(script) {
  return readFileSync(new URL(script.library, folder), "utf8");
}
