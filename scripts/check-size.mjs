#!/usr/bin/env node
// Bundle-size check (`npm run check:size`): what an app pays for importing the
// package. Each entry of size-limits.json is an app built with Vite (Rolldown) the
// way an app bundler builds it (scripts/app-bundle.mjs: ESM, browser, minified,
// tree-shaken, code splitting on, @langchain/* left to the app) from the built dist/
// through the package's own `exports`, every file gzipped on its own as a server
// sends it. Per entry:
// - up front: the entry chunk and its static imports (limit `gzipLimit`);
// - all: every chunk the app may load, up front or through import() (`allGzipLimit`);
// - each of `scenarios`: a module run on the built app in Node by app-bundle's runApp
//   (e.g. scripts/size-chat.mjs: a chat app's calls before its first answer), and
//   the chunks its calls loaded (the scenario's `gzipLimit`);
// - without --limits-only: each chunk with its modules, the raw size (the same
//   build unminified) and each dependency's share: its bytes before minification
//   and its gzip cost, measured as the gzip saved when that dependency is left out.
// A figure over its limit is reported; the check fails on it only with --enforce.
// With --limits-only (what `npm test` runs) only the entries that have a limit are
// built, once each; raw sizes and shares take more builds and are left to the full
// report.
//
//   node scripts/check-size.mjs [--enforce] [--limits-only] [--no-build] [--json]
//
// dist/ must be built: this script runs `npm run build` first unless --no-build.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildApp, kb, runApp, sumGzip } from "./app-bundle.mjs";

const root = resolve(import.meta.dirname, "..");
const args = new Set(process.argv.slice(2));
const enforce = args.has("--enforce");
const limitsOnly = args.has("--limits-only");
const config = JSON.parse(readFileSync(join(root, "size-limits.json"), "utf8"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
/** The limits an entry may set, with the figure each applies to. */
const LIMITS = [
  ["gzipLimit", "up front"],
  ["allGzipLimit", "all"],
];

if (!args.has("--no-build")) {
  const built = spawnSync("npm", ["run", "build", "--silent"], { cwd: root, stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
if (!existsSync(join(root, "dist", "index.js"))) {
  console.error("check-size: dist/index.js is missing: run `npm run build` first");
  process.exit(1);
}

/**
 * Sizes of the app build of `code` (scripts/app-bundle.mjs), every file gzipped on
 * its own: up front (the entry chunk and its static imports), lazy (the rest), and
 * each owner's bytes before minification (Rolldown's module info).
 */
async function measure(code, external = [], minify = true) {
  const app = await buildApp(code, { external, minify });
  const first = app.chunks.filter((chunk) => chunk.upFront);
  const lazy = app.chunks.filter((chunk) => !chunk.upFront);
  const min = (list) => list.reduce((total, chunk) => total + chunk.code.length, 0);
  const minBytes = new Map();
  for (const chunk of app.chunks)
    for (const module of chunk.modules) minBytes.set(module.owner, (minBytes.get(module.owner) ?? 0) + module.bytes);
  return {
    app,
    all: min(app.chunks),
    initial: { chunks: first.length, min: min(first), gzip: sumGzip(first) },
    lazy: { chunks: lazy.length, min: min(lazy), gzip: sumGzip(lazy) },
    minBytes,
  };
}
const report = [];
let over = 0;
for (const entry of config.entries) {
  const scenarios = entry.scenarios ?? [];
  if (limitsOnly && !LIMITS.some(([limit]) => entry[limit] !== undefined) && scenarios.length === 0) continue;
  const sizes = await measure(entry.code);
  const figures = { "up front": sizes.initial.gzip, all: sizes.initial.gzip + sizes.lazy.gzip };
  const limits = Object.fromEntries(LIMITS.map(([limit, figure]) => [figure, entry[limit]]));
  const loaded = new Map();
  for (const scenario of scenarios) {
    const chunks = runApp(sizes.app, join(root, scenario.script));
    loaded.set(scenario.name, chunks);
    figures[scenario.name] = sumGzip(sizes.app.chunks.filter((chunk) => chunks.includes(chunk.fileName)));
    limits[scenario.name] = scenario.gzipLimit;
  }
  const checks = Object.entries(limits)
    .filter(([, limit]) => limit !== undefined)
    .map(([figure, limit]) => ({ figure, limit, size: figures[figure], over: figures[figure] > limit }));
  over += checks.filter((check) => check.over).length;
  sizes.raw = limitsOnly ? undefined : (await measure(entry.code, [], false)).all;
  const shares = [];
  for (const dependency of limitsOnly ? [] : (entry.shares ?? [])) {
    const without = await measure(entry.code, [dependency, `${dependency}/*`]);
    shares.push({
      dependency,
      min: sizes.minBytes.get(dependency) ?? 0,
      gzip: figures.all - (without.initial.gzip + without.lazy.gzip),
    });
  }
  report.push({ name: entry.name, figures, checks, loaded, ...sizes, shares });
}

if (args.has("--json")) {
  console.log(
    JSON.stringify(
      report.map(({ minBytes, app, loaded, ...rest }) => ({
        ...rest,
        loaded: Object.fromEntries(loaded),
        minBytes: Object.fromEntries(minBytes),
        chunks: app.chunks.map((chunk) => ({ ...chunk, code: undefined })),
      })),
      null,
      2,
    ),
  );
} else {
  for (const r of report) {
    console.log(`check-size: ${r.name}`);
    for (const check of r.checks)
      console.log(
        `  ${check.figure}: ${kb(check.size)} gzip (${check.size} B), limit ${check.limit} B: ` +
          (check.over ? `OVER by ${check.size - check.limit} B` : `ok (${check.limit - check.size} B under)`),
      );
    console.log(
      `  up front: ${r.initial.chunks} chunk(s), ${kb(r.initial.min)} min, ${kb(r.initial.gzip)} gzip; ` +
        `lazy: ${r.lazy.chunks} chunk(s), ${kb(r.lazy.min)} min, ${kb(r.lazy.gzip)} gzip; ` +
        `all ${kb(r.figures.all)} gzip` +
        [...r.loaded]
          .map(([name, chunks]) => `; ${name}: ${chunks.length} chunk(s), ${kb(r.figures[name])} gzip`)
          .join(""),
    );
    if (limitsOnly) continue;
    for (const chunk of [...r.app.chunks].sort((a, b) => b.gzip - a.gzip)) {
      const by = [...r.loaded].filter(([, chunks]) => chunks.includes(chunk.fileName)).map(([name]) => name);
      const when = chunk.upFront ? "up front" : ["lazy", ...by].join(", ");
      const modules = chunk.modules.map((module) => `${module.id} ${module.bytes}`).join(", ");
      console.log(`    ${String(chunk.gzip).padStart(6)} B  ${chunk.fileName} (${when}): ${modules}`);
    }
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
  const what = `${over} figure${over === 1 ? " is over its limit" : "s are over their limits"} in size-limits.json`;
  if (enforce) {
    console.error(`check-size: ${what}`);
    process.exitCode = 1;
  } else {
    console.log(`check-size: ${what} (reported only: run with --enforce to fail)`);
  }
}
