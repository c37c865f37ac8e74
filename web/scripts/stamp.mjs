// Writes build.json next to the bundle: a hash of the sources it was built from and the hash
// of every file built. tests/service/test_web_bundle.py recomputes both (without Node), so a
// change to web/ committed without `make web`, or a hand-edited bundle, fails the test suite.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";

const WEB = fileURLToPath(new URL("..", import.meta.url));
const OUT = process.argv[2] ?? join(WEB, "../src/unified_kg_rag/service/static");
const INPUTS = ["index.html", "viewer.html", "package.json", "package-lock.json", "tsconfig.json", "vite.config.ts", "src"];

function files(root, path) {
  const full = join(root, path);
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full).flatMap((name) => files(root, join(path, name)));
}

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const posix = (path) => path.split(sep).join("/");

const sources = INPUTS.flatMap((p) => files(WEB, p))
  .map(posix)
  .filter((p) => !p.endsWith(".test.ts"))
  .sort();
const inputs = sha256(sources.map((p) => `${p}\0${sha256(readFileSync(join(WEB, p)))}\n`).join(""));
const built = Object.fromEntries(
  files(OUT, "")
    .map(posix)
    .filter((p) => p !== "build.json")
    .sort()
    .map((p) => [p, sha256(readFileSync(join(OUT, p)))]),
);
writeFileSync(join(OUT, "build.json"), JSON.stringify({ inputs, files: built }, null, 2) + "\n");
