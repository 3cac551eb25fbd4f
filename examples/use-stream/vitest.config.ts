/**
 * The useStream example's end-to-end test: Playwright's library API driven
 * from Vitest in Node, in Debian's Chromium, against the example built once
 * and served by `global-setup.ts`; at the full depth (TEST_DEPTH=full), in
 * firefox-esr too. `npm run test:examples:use-stream` runs it.
 */
import { defineConfig } from "vitest/config";

const depth = process.env.TEST_DEPTH ?? "fast";
if (depth !== "fast" && depth !== "full") throw new Error(`TEST_DEPTH must be fast or full, not ${depth}`);

export default defineConfig({
  test: {
    root: import.meta.dirname,
    // The Firefox run (use-stream.firefox.e2e.test.ts) is for the full depth: its browser start and
    // pages would double the cost the fast `npm test` pays for this example.
    include: depth === "full" ? ["*.e2e.test.ts"] : ["use-stream.e2e.test.ts"],
    // One browser at a time on this 2-core machine.
    fileParallelism: false,
    globalSetup: ["./global-setup.ts"],
    environment: "node",
    testTimeout: 60_000,
    hookTimeout: 90_000,
    expect: { poll: { timeout: 15_000 } },
  },
});
