#!/usr/bin/env node
// The bundle each saver adds to an app (`npm run bench -- peers` prints it after the
// page's figures; `node bench/peers/bundle.mjs` alone): the app build of a one-line
// entry per saver that scripts/check-size.mjs makes too (scripts/app-bundle.mjs: Vite,
// ESM, minified, @langchain/* left to the app, which has LangGraph anyway), ours from
// the built dist/ through the package's `exports`. Every file the build emits counts,
// each gzipped on its own as a server sends it: JS chunks (those the entry loads up
// front, and the rest) and assets (wasm, data, workers' files).
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildApp, kb, sumGzip } from "../../scripts/app-bundle.mjs";

const root = resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const peers = join(root, "bench/peers");

/** Each saver as an app imports it. */
export const APPS = [
  {
    name: "ours (IndexedDBSaver)",
    code: `import { IndexedDBSaver } from "${pkg.name}";\nconsole.log(IndexedDBSaver);`,
  },
  {
    name: "sqlite-wasm (OPFS, worker)",
    code: `import { SqliteWasmSaver } from "${peers}/sqlite.ts";\nconsole.log(SqliteWasmSaver);`,
  },
  {
    name: "MemorySaver + idb-keyval dump",
    code: `import { KeyvalDumpSaver } from "${peers}/idb-keyval.ts";\nconsole.log(KeyvalDumpSaver);`,
  },
  {
    name: "PGlite saver (idb://)",
    code: `import { pgliteSaver } from "${peers}/pglite.ts";\nconsole.log(pgliteSaver);`,
  },
];

/** Sizes of the app build of `code` (scripts/app-bundle.mjs): per-file gzip sums, up front and in all. */
export async function measureApp(code) {
  const app = await buildApp(code);
  const { chunks, assets } = app;
  return {
    files: chunks.length + assets.length,
    chunks: chunks.length,
    upFront: sumGzip(chunks.filter((c) => c.upFront)),
    js: sumGzip(chunks),
    assets: sumGzip(assets),
    assetNames: assets.map((a) => `${a.fileName} ${kb(a.gzip)}`),
    chunkSizes: chunks.map((c) => [c.fileName, c.upFront, c.gzip]),
  };
}

/** Prints one line per saver, ours / each peer as a ratio of everything the app ships. */
export async function printBundles() {
  const sizes = [];
  for (const app of APPS) sizes.push({ ...app, ...(await measureApp(app.code)) });
  const total = (s) => s.js + s.assets;
  console.log("\nbundle each saver adds to an app (Vite build, @langchain/* external, each file gzipped):");
  for (const s of sizes)
    console.log(
      `bench:bundle  ${s.name.padEnd(30)} ${s.files} files, JS ${kb(s.js)} (${kb(s.upFront)} up front, ${s.chunks} chunks)` +
        `, assets ${kb(s.assets)}${s.assetNames.length ? ` [${s.assetNames.join(", ")}]` : ""}; all ${kb(total(s))}` +
        (s === sizes[0]
          ? ""
          : `; ours / this = ${(total(sizes[0]) / total(s)).toFixed(2)}× all, ${(sizes[0].js / s.js).toFixed(2)}× JS`),
    );
  return sizes;
}

if (process.argv[1] === import.meta.filename) await printBundles();
