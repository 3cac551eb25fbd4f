#!/usr/bin/env node
// Bundle-size check (`npm run check:size`): what an app pays for importing the
// package. Bundles each entry of size-limits.json with esbuild the way an app
// bundler would (ESM, browser, minified, tree-shaken, code splitting on,
// @langchain/* left to the app) from the built dist/ (through the package's own
// `exports`, so it measures what users install), and reports per entry:
// - raw: the same bundle unminified (still tree-shaken), all chunks;
// - min and gzip of the code loaded up front (entry chunk and its static
//   imports), and of the chunks loaded later through import();
// - each dependency's share: its minified bytes (esbuild metafile) and its gzip
//   cost, measured as the gzip size saved when that dependency is left out.
// An entry whose up-front gzip size is over its `gzipLimit` is reported; the
// check fails on it only with --enforce.
//
//   node scripts/check-size.mjs [--enforce] [--no-build] [--json]
//
// dist/ must be built: this script runs `npm run build` first unless --no-build.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "..");
const args = new Set(process.argv.slice(2));
const enforce = args.has("--enforce");
const config = JSON.parse(readFileSync(join(root, "size-limits.json"), "utf8"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

if (!args.has("--no-build")) {
  const built = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
if (!existsSync(join(root, "dist", "index.js"))) {
  console.error("check-size: dist/index.js is missing: run `npm run build` first");
  process.exit(1);
}

/** The package (or "<own>" for this package's dist/) that a metafile input path belongs to. */
function owner(input) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (match) return match[1];
  return input.startsWith("dist/") ? pkg.name : input;
}

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;

/** Bundles `code` (an entry module importing the package by name); returns sizes. */
async function measure(code, external = [], minify = true) {
  const result = await build({
    stdin: { contents: code, resolveDir: root, sourcefile: "size-entry.js", loader: "js" },
    absWorkingDir: root,
    bundle: true,
    write: false,
    outdir: join(root, ".size-out"), // not written (write: false); esbuild needs it for splitting
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify,
    treeShaking: true,
    splitting: true,
    metafile: true,
    legalComments: "none",
    define: { "process.env.NODE_ENV": '"production"' },
    external: ["@langchain/*", ...external],
    logLevel: "silent",
  });
  const outputs = result.metafile.outputs;
  const files = new Map(result.outputFiles.map((file) => [resolve(file.path), file.contents]));
  // Up front: the entry chunk and what it imports statically, transitively.
  const entry = Object.keys(outputs).find((path) => outputs[path].entryPoint);
  const initial = new Set();
  const queue = [entry];
  while (queue.length) {
    const path = queue.pop();
    if (initial.has(path)) continue;
    initial.add(path);
    for (const imported of outputs[path].imports)
      if (imported.kind === "import-statement" && !imported.external) queue.push(imported.path);
  }
  const sum = (paths, size) => paths.reduce((total, path) => total + size(path), 0);
  const chunkPaths = Object.keys(outputs).filter((path) => path.endsWith(".js"));
  const lazy = chunkPaths.filter((path) => !initial.has(path));
  const bytesOf = (path) => files.get(resolve(root, path));
  const concat = (paths) => Buffer.concat(paths.map((path) => Buffer.from(bytesOf(path))));
  const minBytes = new Map();
  for (const path of chunkPaths)
    for (const [input, { bytesInOutput }] of Object.entries(outputs[path].inputs))
      minBytes.set(owner(input), (minBytes.get(owner(input)) ?? 0) + bytesInOutput);
  return {
    all: sum(chunkPaths, (path) => bytesOf(path).length),
    initial: { min: sum([...initial], (path) => bytesOf(path).length), gzip: gzip(concat([...initial])) },
    lazy: { chunks: lazy.length, min: sum(lazy, (path) => bytesOf(path).length), gzip: gzip(concat(lazy)) },
    minBytes,
  };
}

/** KB = 1024 bytes; gzip at level 9. */
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const report = [];
let over = 0;
for (const entry of config.entries) {
  const sizes = await measure(entry.code);
  sizes.raw = (await measure(entry.code, [], false)).all;
  const shares = [];
  for (const dependency of entry.shares ?? []) {
    const without = await measure(entry.code, [dependency, `${dependency}/*`]);
    shares.push({
      dependency,
      min: sizes.minBytes.get(dependency) ?? 0,
      gzip: sizes.initial.gzip + sizes.lazy.gzip - (without.initial.gzip + without.lazy.gzip),
    });
  }
  const overLimit = entry.gzipLimit !== undefined && sizes.initial.gzip > entry.gzipLimit;
  if (overLimit) over++;
  report.push({ name: entry.name, limit: entry.gzipLimit, overLimit, ...sizes, shares });
}

if (args.has("--json")) {
  console.log(
    JSON.stringify(
      report.map(({ minBytes, ...rest }) => ({ ...rest, minBytes: Object.fromEntries(minBytes) })),
      null,
      2,
    ),
  );
} else {
  for (const r of report) {
    const limit =
      r.limit === undefined
        ? ""
        : `, limit ${kb(r.limit)}: ${r.overLimit ? `OVER by ${kb(r.initial.gzip - r.limit)}` : "ok"}`;
    console.log(`check-size: ${r.name}`);
    console.log(
      `  up front: ${kb(r.initial.min)} min, ${kb(r.initial.gzip)} gzip (${r.initial.gzip} B)${limit}` +
        (r.lazy.chunks ? `; lazy (${r.lazy.chunks} chunk(s)): ${kb(r.lazy.min)} min, ${kb(r.lazy.gzip)} gzip` : ""),
    );
    console.log(`  raw (the same bundle unminified, all chunks): ${kb(r.raw)}`);
    const own = r.minBytes.get(pkg.name) ?? 0;
    const parts = [
      `${pkg.name} ${kb(own)} min`,
      ...r.shares.map((s) => `${s.dependency} ${kb(s.min)} min / ${kb(s.gzip)} gzip`),
    ];
    console.log(`  shares: ${parts.join("; ")}`);
  }
}

if (over) {
  const what = `${over} entr${over === 1 ? "y is" : "ies are"} over the gzip limit of size-limits.json`;
  if (enforce) {
    console.error(`check-size: ${what}`);
    process.exitCode = 1;
  } else {
    console.log(`check-size: ${what} (reported only: run with --enforce to fail)`);
  }
}
