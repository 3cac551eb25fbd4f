// What an app ships when it imports a module: one Vite (Rolldown) app build of a
// short entry (ESM, browser, minified, code splitting on, @langchain/* left to the
// app, which has LangGraph anyway), with this package resolved from the built dist/
// through its own `exports`, as an app resolves it. Shared by scripts/check-size.mjs
// (the limits of `npm test`) and bench/peers/bundle.mjs (the peers' bundles).
//
// Every file is gzipped on its own (level 9), as a server sends it: a chunk's gzip
// overhead and the context it cannot share with other chunks count. Per chunk: its
// modules, gzip bytes, whether it loads up front (the entry chunk and its static
// imports, transitively) and whether a scenario run loaded it (runApp below).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "vite";

const root = resolve(import.meta.dirname, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** Gzip size at level 9. */
export const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;

/** KB = 1024 bytes. */
export const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

/** The built file an import of this package resolves to, through its own `exports`. */
function resolveExport(source) {
  const subpath = source === pkg.name ? "." : `.${source.slice(pkg.name.length)}`;
  const target = pkg.exports[subpath];
  const file = typeof target === "string" ? target : target?.import;
  if (!file) throw new Error(`app-bundle: ${source} is not exported by package.json`);
  return join(root, file);
}

/** The package (or this package's name for its dist/) that a module id belongs to. */
export function owner(id) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(id);
  if (match) return match[1];
  return id.includes("/dist/") || id.startsWith("dist/") ? pkg.name : id;
}

/** A module id as a reader wants it: dist/ paths from the project, packages' paths from their folder. */
function shortId(id) {
  return id
    .replace(/^\0/, "")
    .replace(/.*\/node_modules\//, "")
    .replace(`${root}/`, "");
}

/**
 * Builds the app whose entry is `code` and returns its files: `chunks` (JS, with
 * `fileName`, `code`, `gzip`, `upFront`, `imports`, `modules` as `{ id, owner,
 * bytes }` with bytes before minification) and `assets` (wasm, data, workers'
 * files: `fileName`, `gzip`). `external`: packages left out too (for a
 * dependency's share); `minify: false` for the raw size.
 */
export async function buildApp(code, { external = [], minify = true } = {}) {
  if (!existsSync(join(root, "dist", "index.js"))) throw new Error("app-bundle: dist/ is missing: run `npm run build`");
  const dir = mkdtempSync(join(tmpdir(), "app-bundle-"));
  const entry = join(dir, "entry.js");
  writeFileSync(entry, code);
  const escape = (name) => name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  try {
    const built = await build({
      root: dir,
      logLevel: "silent",
      configFile: false,
      resolve: {
        alias: [
          { find: new RegExp(`^${escape(pkg.name)}(/[a-z-]+)?$`), replacement: "$&", customResolver: resolveExport },
        ],
      },
      worker: { format: "es" },
      build: {
        write: false,
        minify: minify ? "oxc" : false,
        target: "es2022",
        modulePreload: false,
        rollupOptions: {
          input: entry,
          external: [/^@langchain\//, ...external.map((name) => new RegExp(`^${escape(name)}(/|$)`))],
          output: { format: "es" },
        },
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
    return {
      chunks: chunks.map((c) => ({
        fileName: c.fileName,
        isEntry: c.isEntry,
        code: c.code,
        gzip: gzip(Buffer.from(c.code)),
        upFront: upFront.has(c.fileName),
        imports: c.imports.filter((name) => byName.has(name)),
        modules: Object.entries(c.modules)
          .filter(([, info]) => info.renderedLength > 0)
          .map(([id, info]) => ({ id: shortId(id), owner: owner(id), bytes: info.renderedLength })),
      })),
      assets: outputs
        .filter((o) => o.type === "asset")
        .map((a) => ({ fileName: a.fileName, gzip: gzip(Buffer.from(a.source)) })),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The sum of the files' gzip sizes. */
export const sumGzip = (files) => files.reduce((total, file) => total + file.gzip, 0);

/**
 * Runs a built app in Node (fake-indexeddb as the browser's IndexedDB) and
 * returns the names of the chunks it loaded, in order: the entry chunk, its
 * static imports and every chunk an `import()` fetched. `scenario` is a module
 * exporting `default async (exports) => void`, given what the entry chunk put
 * on `globalThis.app`; the run ends when it resolves (the process is ended
 * then: a listener left open must not hang the check).
 */
export function runApp(app, scenario) {
  // Under the project, so the app's externals (@langchain/*) and fake-indexeddb resolve.
  const base = join(root, "node_modules", ".cache");
  mkdirSync(base, { recursive: true });
  const dir = mkdtempSync(join(base, "app-run-"));
  try {
    for (const chunk of app.chunks) {
      const file = join(dir, chunk.fileName);
      mkdirSync(dirname(file), { recursive: true });
      // Appended after measuring: each chunk says that it was evaluated.
      writeFileSync(
        file,
        `${chunk.code}\n;(globalThis.loadedChunks ??= []).push(${JSON.stringify(chunk.fileName)});\n`,
      );
    }
    const runner = join(dir, "run.mjs");
    const entry = app.chunks.find((c) => c.isEntry).fileName;
    writeFileSync(
      runner,
      [
        `import "fake-indexeddb/auto";`,
        `import scenario from ${JSON.stringify(resolve(scenario))};`,
        `await import(${JSON.stringify(`./${entry}`)});`,
        `await scenario(globalThis.app);`,
        `console.log(JSON.stringify(globalThis.loadedChunks));`,
        `process.exit(0);`,
      ].join("\n"),
    );
    const run = spawnSync(process.execPath, [runner], { cwd: dir, encoding: "utf8", timeout: 60_000 });
    if (run.status !== 0) throw new Error(`app-bundle: the scenario ${scenario} failed:\n${run.stderr}${run.stdout}`);
    return JSON.parse(run.stdout.trim().split("\n").pop());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
