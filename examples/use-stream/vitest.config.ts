/**
 * The useStream example's end-to-end test: Playwright's library API driven
 * from Vitest in Node, in Debian's Chromium, against the example built once
 * and served by `global-setup.ts`. `npm run test:examples:use-stream` runs it.
 */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ["*.e2e.test.ts"],
    globalSetup: ["./global-setup.ts"],
    environment: "node",
    testTimeout: 60_000,
    hookTimeout: 90_000,
    expect: { poll: { timeout: 15_000 } },
  },
});
