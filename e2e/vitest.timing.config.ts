/**
 * The end-to-end tests that measure time (TIMED_FILES), one file at a time
 * with the machine to themselves: `npm run test:e2e` runs them after the
 * others. Same set-up as e2e/vitest.config.ts otherwise.
 */
import { defineConfig } from "vitest/config";
import { TIMED_FILES } from "./vitest.config.js";

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: TIMED_FILES,
    globalSetup: ["./global-setup.ts"],
    environment: "node",
    // Files of a worker share its module state, and so its Chromium (e2e/support.ts).
    isolate: false,
    testTimeout: 60_000,
    // expect.poll's default second is shorter than a page load on a loaded 2-core machine.
    expect: { poll: { timeout: 15_000 } },
    hookTimeout: 60_000,
    maxWorkers: 1,
    fileParallelism: false,
  },
});
