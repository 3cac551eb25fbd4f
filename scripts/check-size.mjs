#!/usr/bin/env node
// Bundle-size check (`npm run check:size`): what an app pays for importing the
// package. Bundles each entry of size-limits.json with Vite (Rolldown) the way an app
// bundler would (ESM, browser, minified, tree-shaken, code splitting on,
// @langchain/* left to the app) from the built dist/ (through the package's own
// `exports`, so it measures what users install), and reports per entry:
// - raw: the same bundle unminified (still tree-shaken), all chunks;
// - min and gzip of the code loaded up front (entry chunk and its static
//   imports), and of the chunks loaded later through import();
// - each dependency's share: its bytes before minification (Rolldown's module info) and its gzip
//   cost, measured as the gzip size saved when that dependency is left out.
// An entry whose up-front gzip size is over its `gzipLimit` is reported; the
// check fails on it only with --enforce. With --limits-only (what `npm test`
// runs) only the entries that have a limit are bundled, once each, for the
// up-front figure the limit applies to; raw sizes and shares take four more
// bundles per entry and are left to the full report.
//
//   node scripts/check-size.mjs [--enforce] [--limits-only] [--no-build] [--json]
//
// dist/ must be built: this script runs `npm run build` first unless --no-build.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { build as viteBuild } from "vite";

const root = resolve(import.meta.dirname, "..");
const args = new Set(process.argv.slice(2));
const enforce = args.has("--enforce");
const limitsOnly = args.has("--limits-only");
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
  return input.includes("/dist/") || input.startsWith("dist/") ? pkg.name : input;
}

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;

/**
 * Bundles `code` (an entry module importing the package by name) with Vite
 * (Rolldown), the bundler this project and most of its users build with;
 * returns sizes. esbuild is not used for the figure: its code splitting puts
 * a module that the root entry re-exports and an import() also reaches into a
 * shared up-front chunk, counting code that apps never load up front.
 */
async function measure(code, external = [], minify = true) {
  const dir = mkdtempSync(join(tmpdir(), "size-"));
  const entryFile = join(dir, "size-entry.js");
  writeFileSync(entryFile, code);
  const escape = (name) => name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const externals = [/^@langchain\//, ...external.map((name) => new RegExp(`^${escape(name)}(/|$)`))];
  try {
    const built = await viteBuild({
      root: dir,
      logLevel: "silent",
      configFile: false,
      // The package by name, through its own `exports`, as an app resolves it.
      resolve: {
        alias: [
          { find: /^langgraph-checkpoint-indexeddb(\/[a-z-]+)?$/, replacement: "$&", customResolver: resolveExport },
        ],
      },
      build: {
        write: false,
        minify: minify ? "oxc" : false,
        target: "es2022",
        modulePreload: false,
        rollupOptions: {
          input: entryFile,
          external: externals,
          preserveEntrySignatures: "strict",
          output: { format: "es" },
        },
      },
    });
    const chunks = (Array.isArray(built) ? built[0] : built).output.filter((output) => output.type === "chunk");
    const byName = new Map(chunks.map((chunk) => [chunk.fileName, chunk]));
    // Up front: the entry chunk and what it imports statically, transitively.
    const initial = new Set();
    const queue = [chunks.find((chunk) => chunk.isEntry).fileName];
    while (queue.length) {
      const name = queue.pop();
      if (initial.has(name)) continue;
      initial.add(name);
      for (const imported of byName.get(name).imports) if (byName.has(imported)) queue.push(imported);
    }
    const lazy = chunks.filter((chunk) => !initial.has(chunk.fileName));
    const codeOf = (list) => Buffer.from(list.map((chunk) => chunk.code).join(""));
    const first = [...initial].map((name) => byName.get(name));
    const minBytes = new Map();
    for (const chunk of chunks)
      for (const [id, info] of Object.entries(chunk.modules))
        minBytes.set(owner(id), (minBytes.get(owner(id)) ?? 0) + info.renderedLength); // before minification
    return {
      all: codeOf(chunks).length,
      initial: { min: codeOf(first).length, gzip: gzip(codeOf(first)) },
      lazy: { chunks: lazy.length, min: codeOf(lazy).length, gzip: gzip(codeOf(lazy)) },
      minBytes,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The built file an import of this package resolves to, through its own `exports`. */
function resolveExport(source) {
  const subpath = source === pkg.name ? "." : `.${source.slice(pkg.name.length)}`;
  const target = pkg.exports[subpath];
  const file = typeof target === "string" ? target : target?.import;
  if (!file) throw new Error(`check-size: ${source} is not exported by package.json`);
  return join(root, file);
}

/** KB = 1024 bytes; gzip at level 9. */
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const report = [];
let over = 0;
for (const entry of config.entries) {
  if (limitsOnly && entry.gzipLimit === undefined) continue;
  const sizes = await measure(entry.code);
  sizes.raw = limitsOnly ? undefined : (await measure(entry.code, [], false)).all;
  const shares = [];
  for (const dependency of limitsOnly ? [] : (entry.shares ?? [])) {
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
    if (limitsOnly) continue;
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
