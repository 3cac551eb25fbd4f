/**
 * End-to-end tests of the demo: Playwright's library API driven from Vitest
 * in Node, against the demo built and served once by `global-setup.ts` on a
 * free port. Run with `npx vitest run -c e2e/vitest.config.ts`.
 */
import { defineConfig } from "vitest/config";

/**
 * Files whose tests measure time (long tasks, how fast History fills): they
 * run afterwards, alone (e2e/vitest.timing.config.ts), so that another
 * file's Chromium does not share the 2 cores while they measure.
 */
export const TIMED_FILES = ["history.e2e.test.ts", "turns.e2e.test.ts"];

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ["**/*.e2e.test.ts"],
    exclude: ["**/node_modules/**", ...TIMED_FILES],
    globalSetup: ["./global-setup.ts"],
    environment: "node",
    // Files of a worker share its module state, and so its Chromium (e2e/support.ts).
    isolate: false,
    testTimeout: 60_000,
    // expect.poll's default second is shorter than a page load on a loaded 2-core machine.
    expect: { poll: { timeout: 15_000 } },
    hookTimeout: 60_000,
    // Each file drives its own Chromium; two at a time suit a 2-core machine.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
