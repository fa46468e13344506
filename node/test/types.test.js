// The TypeScript declarations compile against a use of the API.
import { test } from "node:test";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";

test("the .d.ts files type a use of the API", () => {
  const pkg = createRequire(import.meta.url).resolve("typescript/package.json");
  const tsc = pkg.replace(/package\.json$/, "bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", new URL("./types/tsconfig.json", import.meta.url).pathname], { stdio: "pipe" });
});
