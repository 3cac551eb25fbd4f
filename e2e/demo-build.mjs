/**
 * The demo's production build for the end-to-end tests, as `npm run
 * demo:build` makes it, plus two entries the tests import in the page
 * (`/e2e/internals.js`: e2e/demo-internals.ts; `/e2e/quick-start.js`: the
 * README's quick start). e2e/global-setup.ts builds through it; so does
 * `npm run e2e:build` (`node e2e/demo-build.mjs`, into `E2E_DEMO_BUILD`),
 * which `npm test` runs in the Firefox phase: that phase leaves a core
 * idle for a while, where the build sat alone at the start of the e2e phase.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

/** The demo's folder (its Vite config and its page). */
export const demoRoot = fileURLToPath(new URL("../demo", import.meta.url));

/** Entries built beside the app, each at `/e2e/<name>.js`. */
const TEST_ENTRIES = {
  internals: fileURLToPath(new URL("./demo-internals.ts", import.meta.url)),
  "quick-start": fileURLToPath(new URL("../examples/quick-start.ts", import.meta.url)),
};

/**
 * Builds the demo and the test entries into `outDir`, unless a finished
 * build is there already (its marker, written once the build has finished:
 * a folder without it is built again).
 */
export async function buildDemoOnce(outDir) {
  const marker = join(outDir, ".e2e-built");
  if (existsSync(marker)) return;
  mkdirSync(outDir, { recursive: true });
  // Production, as `npm run demo:build` builds it, whoever runs this: Vitest sets NODE_ENV=test, which Vite
  // would honour (Workbox's development service worker, `process.env.NODE_ENV` "test" in the bundle).
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    await buildApp(outDir);
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  writeFileSync(marker, "");
}

/** The build itself: the app and the test entries, into `outDir`. */
async function buildApp(outDir) {
  await build({
    root: demoRoot,
    configFile: join(demoRoot, "vite.config.ts"),
    logLevel: "warn",
    build: {
      outDir,
      emptyOutDir: true,
      rolldownOptions: {
        input: { index: join(demoRoot, "index.html"), ...TEST_ENTRIES },
        // An app build drops entries' exports (Vite's default); the tests import these.
        preserveEntrySignatures: "exports-only",
        output: {
          entryFileNames: (chunk) => (chunk.name in TEST_ENTRIES ? "e2e/[name].js" : "assets/[name]-[hash].js"),
        },
      },
    },
    mode: "production",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outDir = process.env.E2E_DEMO_BUILD;
  if (!outDir) throw new Error("e2e/demo-build.mjs: set E2E_DEMO_BUILD to the folder to build the demo into");
  await buildDemoOnce(outDir);
}
