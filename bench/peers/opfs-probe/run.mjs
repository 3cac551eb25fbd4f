#!/usr/bin/env node
// `node bench/peers/opfs-probe/run.mjs`: what one OPFS file call and one
// sqlite-wasm statement cost, in the context chromium.launch() gives (off the
// record: OPFS calls are IPCs to the browser) and in a profile on disk, as
// users' pages run. The figures behind the sqlite-wasm peer's pragmas
// (docs/benchmarks.md, "Why the sqlite-wasm peer measured 10× slow").
import { build, preview } from "vite";
import { chromium } from "playwright";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromiumArgs as args, fullChromiumPath as executablePath } from "../../../test/support/chromium.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = mkdtempSync(join(tmpdir(), "lg-idb-opfs-probe-"));
const profile = mkdtempSync(join(tmpdir(), "lg-idb-opfs-probe-profile-"));
await build({ root: here, configFile: false, logLevel: "error", build: { outDir, emptyOutDir: true } });
const server = await preview({
  root: here,
  configFile: false,
  logLevel: "error",
  build: { outDir },
  preview: { host: "127.0.0.1", port: 0 },
});
const url = `http://127.0.0.1:${server.httpServer.address().port}/index.html`;

/** The probe's lines in a page of `context`. */
async function probe(context) {
  const page = await context.newPage();
  await page.goto(url);
  const lines = await (
    await page.waitForFunction(() => globalThis.__probe, undefined, { timeout: 300_000 })
  ).jsonValue();
  await page.close();
  return lines;
}

try {
  const browser = await chromium.launch({ executablePath, args, headless: true });
  console.log(`off the record (chromium.launch()):\n${await probe(await browser.newContext())}`);
  await browser.close();
  const persistent = await chromium.launchPersistentContext(profile, { executablePath, args, headless: true });
  console.log(`\na profile on disk (launchPersistentContext):\n${await probe(persistent)}`);
  await persistent.close();
} finally {
  await server.close();
  rmSync(outDir, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
}
