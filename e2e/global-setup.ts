/**
 * Builds the demo once, as `npm run demo:build` does, plus two entries the
 * tests import in the page (`/e2e/internals.js`: e2e/demo-internals.ts;
 * `/e2e/quick-start.js`: the README's quick start), serves the build as
 * `npm run demo:preview` does on a free loopback port, and hands the URL to
 * the tests (`inject("baseURL")`). A built page loads in a few requests;
 * the dev server's hundreds of modules per fresh context were most of the
 * suite's time.
 *
 * With `E2E_DEMO_BUILD` set to a folder (scripts/test.mjs sets it for the
 * whole of `npm test`), the build goes there, is kept, and a later run with
 * the same folder serves it again instead of building: the timed phase
 * reuses the build of the parallel one. The folder's owner removes it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { build, preview, type PreviewServer } from "vite";

declare module "vitest" {
  export interface ProvidedContext {
    baseURL: string;
  }
}

let server: PreviewServer | undefined;
/** A build folder of this run's own, removed at teardown (unset when `E2E_DEMO_BUILD` names one). */
let ownOutDir: string | undefined;

/** Entries built beside the app, each at `/e2e/<name>.js`. */
const TEST_ENTRIES = {
  internals: fileURLToPath(new URL("./demo-internals.ts", import.meta.url)),
  "quick-start": fileURLToPath(new URL("../examples/quick-start.ts", import.meta.url)),
};

export async function setup(project: TestProject): Promise<void> {
  const root = fileURLToPath(new URL("../demo", import.meta.url));
  const shared = process.env.E2E_DEMO_BUILD;
  const outDir = shared || (ownOutDir = mkdtempSync(join(tmpdir(), "demo-e2e-")));
  // The marker is written once the build has finished: a folder without it is built again.
  const marker = join(outDir, ".e2e-built");
  if (!existsSync(marker)) {
    await buildDemo(root, outDir);
    writeFileSync(marker, "");
  }
  server = await preview({
    root,
    configFile: `${root}/vite.config.ts`,
    logLevel: "warn",
    build: { outDir },
    preview: { port: 0, strictPort: false, host: "127.0.0.1" },
  });
  project.provide("baseURL", server.resolvedUrls!.local[0]!);
}

/** The demo's production build, plus the entries the tests import, into `outDir`. */
async function buildDemo(root: string, outDir: string): Promise<void> {
  mkdirSync(outDir, { recursive: true });
  await build({
    root,
    configFile: `${root}/vite.config.ts`,
    logLevel: "warn",
    build: {
      outDir,
      emptyOutDir: true,
      rolldownOptions: {
        input: { index: `${root}/index.html`, ...TEST_ENTRIES },
        // An app build drops entries' exports (Vite's default); the tests import these.
        preserveEntrySignatures: "exports-only",
        output: {
          entryFileNames: (chunk) => (chunk.name in TEST_ENTRIES ? "e2e/[name].js" : "assets/[name]-[hash].js"),
        },
      },
    },
  });
}

export async function teardown(): Promise<void> {
  await server?.close();
  if (ownOutDir) rmSync(ownOutDir, { recursive: true, force: true });
}
