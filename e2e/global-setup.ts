/**
 * Builds the demo once (e2e/demo-build.mjs: as `npm run demo:build` does,
 * plus the entries the tests import in the page), serves the build as
 * `npm run demo:preview` does on a free loopback port, and hands the URL to
 * the tests (`inject("baseURL")`). A built page loads in a few requests;
 * the dev server's hundreds of modules per fresh context were most of the
 * suite's time. Its scripts and styles are gzipped once (precompressed.ts),
 * not at each request.
 *
 * With `E2E_DEMO_BUILD` set to a folder (scripts/test.mjs sets it for the
 * whole of `npm test`), the build goes there, is kept, and a later run with
 * the same folder serves it again instead of building: the timed phase
 * reuses the build of the parallel one, and both reuse the one `npm run
 * e2e:build` made earlier. The folder's owner removes it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { preview, type PreviewServer } from "vite";
import { buildDemoOnce, demoRoot } from "./demo-build.mjs";
import { precompress, servePrecompressed } from "./precompressed.js";

declare module "vitest" {
  export interface ProvidedContext {
    baseURL: string;
  }
}

let server: PreviewServer | undefined;
/** A build folder of this run's own, removed at teardown (unset when `E2E_DEMO_BUILD` names one). */
let ownOutDir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const shared = process.env.E2E_DEMO_BUILD;
  const outDir = shared || (ownOutDir = mkdtempSync(join(tmpdir(), "demo-e2e-")));
  await buildDemoOnce(outDir);
  precompress(outDir);
  server = await preview({
    root: demoRoot,
    configFile: `${demoRoot}/vite.config.ts`,
    logLevel: "warn",
    plugins: [servePrecompressed(outDir)],
    build: { outDir },
    preview: { port: 0, strictPort: false, host: "127.0.0.1" },
  });
  project.provide("baseURL", server.resolvedUrls!.local[0]!);
}

export async function teardown(): Promise<void> {
  await server?.close();
  if (ownOutDir) rmSync(ownOutDir, { recursive: true, force: true });
}
