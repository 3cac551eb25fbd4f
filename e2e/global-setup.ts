/**
 * Builds the demo once, as `npm run demo:build` does, plus two entries the
 * tests import in the page (`/e2e/internals.js`: e2e/demo-internals.ts;
 * `/e2e/quick-start.js`: the README's quick start), serves the build as
 * `npm run demo:preview` does on a free loopback port, and hands the URL to
 * the tests (`inject("baseURL")`). A built page loads in a few requests;
 * the dev server's hundreds of modules per fresh context were most of the
 * suite's time.
 */
import { mkdtempSync, rmSync } from "node:fs";
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
let outDir: string | undefined;

/** Entries built beside the app, each at `/e2e/<name>.js`. */
const TEST_ENTRIES = {
  internals: fileURLToPath(new URL("./demo-internals.ts", import.meta.url)),
  "quick-start": fileURLToPath(new URL("../examples/quick-start.ts", import.meta.url)),
};

export async function setup(project: TestProject): Promise<void> {
  const root = fileURLToPath(new URL("../demo", import.meta.url));
  outDir = mkdtempSync(join(tmpdir(), "demo-e2e-"));
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
  server = await preview({
    root,
    configFile: `${root}/vite.config.ts`,
    logLevel: "warn",
    build: { outDir },
    preview: { port: 0, strictPort: false, host: "127.0.0.1" },
  });
  project.provide("baseURL", server.resolvedUrls!.local[0]!);
}

export async function teardown(): Promise<void> {
  await server?.close();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
}
