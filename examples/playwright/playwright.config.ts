/**
 * Playwright config of the example: the app on Vite, a setup project that
 * records a conversation through the app and saves it as a storage state,
 * and the tests, in Debian's Chromium (Playwright cannot download its own
 * browsers on these machines). `npm run test:examples` runs it.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "@playwright/test";
import { chromiumArgs, chromiumPath } from "../../test/support/chromium.mjs";

const port = Number(process.env.EXAMPLE_PORT ?? 41873);
const vite = JSON.stringify(fileURLToPath(new URL("../../node_modules/vite/bin/vite.js", import.meta.url)));
/** The streaming proof's runs: a few in `npm test`, 50 in `npm run test:full`. */
export const STREAM_RUNS = Number(process.env.STREAM_RUNS ?? 3);

export default defineConfig({
  testDir: "tests",
  outputDir: "../../test-results/example-playwright",
  fullyParallel: false,
  // Two workers (files split between them): one kept about one core busy (the example alone, every
  // process counted: 41.6 CPU-s; its tests take 42 s in a quiet `npm test`), so the other core idled in
  // the examples phase once the useStream example beside it (about 28 s) had ended.
  workers: 2,
  reporter: process.env.CI ? "dot" : "list",
  timeout: 60_000,
  expect: { timeout: 5_000 },
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: { executablePath: chromiumPath, args: chromiumArgs },
  },
  webServer: {
    // A production build: a dev server makes each new context load hundreds of modules (12-15 s here).
    // Vite's own script, not npx: each npx start cost about 0.8 CPU-s more (npm resolving the package).
    command: `node ${vite} build --config vite.config.ts && node ${vite} preview --config vite.config.ts --host 127.0.0.1 --port ${port} --strictPort`,
    cwd: import.meta.dirname,
    url: `http://127.0.0.1:${port}/`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
  projects: [
    { name: "setup", testMatch: /.*\.setup\.ts/ },
    // Only the tests that open the setup's storage states wait for it; the others start beside it.
    { name: "chromium", testMatch: /.*\.spec\.ts/, testIgnore: /seeded\.spec\.ts/ },
    { name: "seeded", testMatch: /seeded\.spec\.ts/, dependencies: ["setup"] },
  ],
});
