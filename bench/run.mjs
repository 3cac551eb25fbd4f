#!/usr/bin/env node
// `npm run bench`: serves bench/ with Vite, runs every suite in headless
// Chromium (Debian's, or CHROMIUM_PATH) and prints one table: each figure
// beside its baseline (MemorySaver, raw IndexedDB, ...) measured in the same
// run, as a ratio. `npm run bench -- saver` runs only the suites named.
import { build, preview } from "vite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { chromium } from "playwright";
import { chromiumArgs as args, fullChromiumPath as executablePath } from "../test/support/chromium.mjs";
import { fileURLToPath } from "node:url";
import { dirname, resolve } from "node:path";
import { spawnSync } from "node:child_process";

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));

// The sync load bench runs in Node (a sync server on PostgreSQL and
// fake-indexeddb devices), after the browser suites or alone (`-- sync`).
function runSyncBench() {
  const run = spawnSync("npx", ["vitest", "run", "-c", "bench/sync/vitest.config.ts", "--silent=false"], {
    cwd: resolve(here, ".."),
    encoding: "utf8",
  });
  const lines = `${run.stdout}${run.stderr}`.split("\n").filter((line) => line.startsWith("bench:sync"));
  console.log(`\n${lines.join("\n") || "bench:sync  failed:\n" + run.stdout + run.stderr}`);
  return run.status === 0 ? 0 : 1;
}
if (only.length === 1 && only[0] === "sync") process.exit(runSyncBench());

// The PGlite peer against the official conformance suite, in Node (minutes: a PGlite per test),
// and the sqlite-wasm peer, in Chromium (its worker needs a browser).
const conformance = {
  "pglite-conformance": "bench/peers/vitest.config.ts",
  "sqlite-conformance": "bench/peers/vitest.browser.config.ts",
}[only.length === 1 ? only[0] : ""];
if (conformance) {
  const run = spawnSync("npx", ["vitest", "run", "-c", conformance], {
    cwd: resolve(here, ".."),
    stdio: "inherit",
  });
  process.exit(run.status ?? 1);
}

// A production build served statically: what users ship, and no dev-server
// dependency discovery reloading the page in the middle of a run.
const outDir = mkdtempSync(resolve(tmpdir(), "lg-idb-bench-"));
// The peers suite's per-profile figures load a page of their own (peers/cold.html).
const peers = only.includes("peers");
const input = { index: resolve(here, "index.html"), ...(peers ? { cold: resolve(here, "peers/cold.html") } : {}) };
await build({
  root: here,
  configFile: false,
  logLevel: "error",
  build: { outDir, emptyOutDir: true, minify: true, rollupOptions: { input } },
});
const server = await preview({
  root: here,
  configFile: false,
  logLevel: "error",
  build: { outDir },
  // Cross-origin isolated, so performance.now() counts in 5 µs steps, not
  // 100 µs: a first walk of a few ms is measured one call at a time.
  preview: {
    host: "127.0.0.1",
    port: 0,
    headers: { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" },
  },
});
const address = server.httpServer.address();
// `-- peers --figures=calls`: only those figures of the peers suite (loops, calls, chat), for quick runs.
const figures = process.argv.find((arg) => arg.startsWith("--figures="))?.slice("--figures=".length);
const query = [only.length ? `only=${only.join(",")}` : "", figures ? `figures=${figures}` : ""].filter(Boolean);
const url = `http://127.0.0.1:${address.port}/index.html${query.length ? `?${query.join("&")}` : ""}`;
// --expose-gc: the load suite measures the heap after a full collection.
const launchArgs = { executablePath, args: [...args, "--js-flags=--expose-gc"], headless: true };
// Every suite runs in a profile on disk, as users' pages do: a context of
// chromium.launch() is off the record, where IndexedDB lives in memory and
// every OPFS file operation is an IPC to the browser (0.1-0.8 ms each here
// against 2-45 µs on disk), which made the sqlite-wasm peer 10× slower and
// measured our own reads and commits without a disk. BENCH_OFF_THE_RECORD=1
// runs the suites off the record as before this change, to compare.
const launchPersistent = (profile) => chromium.launchPersistentContext(profile, launchArgs);
const offTheRecord = process.env.BENCH_OFF_THE_RECORD === "1" && !peers;
const profile = offTheRecord ? undefined : mkdtempSync(resolve(tmpdir(), "lg-idb-bench-profile-"));
const browser = profile ? await launchPersistent(profile) : await chromium.launch(launchArgs);
let failed = false;
try {
  const page = await browser.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") console.error(`[page] ${message.text()}`);
    else if (message.text().startsWith("bench:")) console.log(message.text());
  });
  page.on("pageerror", (error) => {
    failed = true;
    console.error(`[page error] ${error.message}`);
  });
  await page.goto(url);
  const handle = await page.waitForFunction(() => globalThis.__benchResult, undefined, {
    timeout: 30 * 60_000,
    polling: 500,
  });
  const result = await handle.jsonValue();
  if (result.error) {
    failed = true;
    console.error(result.error);
  }
  const rows = result.rows ?? [];
  if (peers && !result.error && !figures) {
    await browser.close();
    const { profileFigures } = await import("./peers/profiles.mjs");
    rows.push(...(await profileFigures(`http://127.0.0.1:${address.port}`, launchPersistent)));
  }
  printTable(rows);
  console.log(`\n${result.environment}`);
} finally {
  await browser.close();
  await server.close();
  rmSync(outDir, { recursive: true, force: true });
  if (profile) rmSync(profile, { recursive: true, force: true });
}
if (only.length === 0 && runSyncBench() !== 0) failed = true;
// The bundle each peer adds to an app: ours from a fresh dist/, built after the
// page's timings so the compiler does not share the machine with them.
if (only.includes("peers") && !figures) {
  const built = spawnSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: resolve(here, ".."), stdio: "inherit" });
  if (built.status !== 0) failed = true;
  else await (await import("./peers/bundle.mjs")).printBundles();
}
process.exit(failed ? 1 : 0);

function printTable(rows) {
  const header = ["suite", "figure", "ours", "baseline", "ratio", "goal", "ok"];
  const body = rows.map((row) => [
    row.suite,
    row.name,
    row.ours,
    `${row.baseline} (${row.baselineName})`,
    row.ratio,
    row.goal ?? "",
    row.ok === undefined ? "" : row.ok ? "yes" : "NO",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  console.log(`\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}`);
  for (const row of body) console.log(line(row));
}
