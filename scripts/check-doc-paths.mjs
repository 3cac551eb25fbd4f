// Fails when the README or a doc names a file of this repository that does
// not exist. The docs point readers at modules and tests by path, and the
// layout change of issue 10 moved every file: a stale path sends a reader
// (or a reviewer checking a claim) nowhere.
//   node scripts/check-doc-paths.mjs
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Top-level folders whose paths the docs cite. */
const ROOTS = ["src", "test", "bench", "demo", "e2e", "scripts", "docs"];

/**
 * Repository paths cited in `markdown`: `root/…` with a file extension or a
 * trailing slash, outside URLs; globs and brace lists are skipped (they name
 * patterns, not files).
 * @param {string} markdown
 * @returns {string[]}
 */
export function citedPaths(markdown) {
  const found = new Set();
  const pattern = new RegExp(String.raw`(?<![\w./:-])(?:${ROOTS.join("|")})/[\w./{},*-]*[\w/]`, "g");
  for (const [path] of markdown.matchAll(pattern)) {
    if (/[*{}]/.test(path)) continue;
    // A bare folder name without a slash after it ("see src/saver") is ambiguous with prose; files and folders/ are not.
    if (!/\.\w+$/.test(path) && !path.endsWith("/")) continue;
    found.add(path);
  }
  return [...found];
}

/**
 * The cited paths of each markdown file that are missing under `root`.
 * @param {string} root
 * @param {string[]} files markdown files, relative to `root`
 * @returns {{ file: string, path: string }[]}
 */
export function missingPaths(root, files) {
  const missing = [];
  for (const file of files) {
    for (const path of citedPaths(readFileSync(join(root, file), "utf8"))) {
      if (!existsSync(join(root, path))) missing.push({ file, path });
    }
  }
  return missing;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const docs = readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  const missing = missingPaths(root, ["README.md", ...docs, "test/golden/README.md"]);
  for (const { file, path } of missing) console.error(`${file}: cites ${path}, which does not exist`);
  if (missing.length > 0) process.exit(1);
  console.log(`check-doc-paths: every path cited in README.md and docs/ exists`);
}
