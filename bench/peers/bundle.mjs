#!/usr/bin/env node
// The bundle each saver adds to an app (`npm run bench -- peers` prints it after the
// page's figures; `node bench/peers/bundle.mjs` alone): a Vite app build of a one-line
// entry per saver (ESM, minified, @langchain/* left to the app, which has LangGraph
// anyway), ours from the built dist/ through the package's `exports`. Every file the
// build emits counts, each gzipped on its own as a server sends it: JS chunks (those
// the entry loads up front, and the rest) and assets (wasm, data, workers' files).
import { build } from "vite";
import { gzipSync } from "node:zlib";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

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

/** The built file an import of this package resolves to, through its own `exports`. */
function resolveExport(source) {
  const target = pkg.exports[source === pkg.name ? "." : `.${source.slice(pkg.name.length)}`];
  return join(root, typeof target === "string" ? target : target.import);
}

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;

/** Sizes of the app build of `code`: per-file gzip sums, up front and in all. */
export async function measureApp(code) {
  if (!existsSync(join(root, "dist/index.js"))) throw new Error("bundle: dist/ is missing: run `npm run build` first");
  const dir = mkdtempSync(join(tmpdir(), "peers-bundle-"));
  writeFileSync(join(dir, "entry.js"), code);
  try {
    const built = await build({
      root: dir,
      logLevel: "silent",
      configFile: false,
      resolve: {
        alias: [{ find: new RegExp(`^${pkg.name}(/[a-z-]+)?$`), replacement: "$&", customResolver: resolveExport }],
      },
      worker: { format: "es" },
      build: {
        write: false,
        minify: "oxc",
        target: "es2022",
        modulePreload: false,
        rollupOptions: { input: join(dir, "entry.js"), external: [/^@langchain\//], output: { format: "es" } },
      },
    });
    const outputs = (Array.isArray(built) ? built[0] : built).output;
    const chunks = outputs.filter((o) => o.type === "chunk");
    const byName = new Map(chunks.map((c) => [c.fileName, c]));
    const upFront = new Set();
    const queue = [chunks.find((c) => c.isEntry).fileName];
    while (queue.length) {
      const name = queue.pop();
      if (upFront.has(name)) continue;
      upFront.add(name);
      for (const imported of byName.get(name).imports) if (byName.has(imported)) queue.push(imported);
    }
    const size = (o) => gzip(Buffer.from(o.type === "chunk" ? o.code : o.source));
    const assets = outputs.filter((o) => o.type === "asset");
    const sum = (list) => list.reduce((total, o) => total + size(o), 0);
    return {
      files: outputs.length,
      chunks: chunks.length,
      upFront: sum(chunks.filter((c) => upFront.has(c.fileName))),
      js: sum(chunks),
      assets: sum(assets),
      assetNames: assets.map((a) => `${a.fileName} ${(size(a) / 1024).toFixed(1)} KB`),
      chunkSizes: chunks.map((c) => [c.fileName, upFront.has(c.fileName), size(c)]),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

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
