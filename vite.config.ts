import { defineConfig } from "vitest/config";
import { playwright } from "@vitest/browser-playwright";
import { chromiumArgs, chromiumPath } from "./test/support/chromium.js";
import { configuredDepth } from "./test/support/depth-config.js";

/** The crash test: its own project (see below). */
const CRASH_TEST = "test/suites/journal-crash.node.test.ts";
/** The sync convergence test and its world's clean-up test: their own project (see docs/testing.md). */
const CONVERGENCE_TESTS = [
  "test/suites/sync-convergence.node.test.ts",
  "test/suites/sync-convergence-world.node.test.ts",
];
/**
 * Node tests about a module's state at its first import in a realm
 * (msgpackr's extension registry, the per-realm lock fallback): each file in
 * a fresh process (`node-isolated`). Every other file shares its worker or
 * page with the files before it (`isolate: false`): re-importing LangGraph,
 * the validation suite and fake-indexeddb per file cost about 40% of the
 * Node project's CPU, and 30% of the Chromium project's. In Chromium these
 * two share the page too: the registry's check loads a frame of its own, and
 * the lock fallback is Node's (a project of their own cost a Vite server, its
 * optimizer and a Chromium).
 */
const FIRST_IMPORT_TESTS = ["src/serde/msgpack/msgpack.test.ts", "src/runs/locks.test.ts"];
/**
 * Files the Node projects run at once. Their files wait on PostgreSQL, server
 * processes, Chromium and timers: with two at a time the two cores idled 27% of
 * the phase (vmstat, the Node files alone), with three 10%; the phase with the
 * linters beside it, alternating on a quiet machine: 118.0 and 123.4 s with two,
 * 102.4 and 101.3 s with three (docs/testing.md). It is set on the projects,
 * since a project that `extends` the root config keeps the root's `maxWorkers`
 * over a `--maxWorkers` given on the command line.
 */
const NODE_FILES_AT_ONCE = 3;

const chromium = playwright({
  launchOptions: { executablePath: chromiumPath, args: chromiumArgs },
});

/**
 * Headless Chromium through Vitest browser mode, as the browser projects run
 * it: a new object per project, since Vitest names each project's instances
 * in place.
 */
const inChromium = () => ({
  enabled: true,
  headless: true,
  provider: chromium,
  instances: [{ browser: "chromium" as const }],
  screenshotFailures: false,
});

/**
 * One config for the library build and every Vitest project:
 * - `node`: unit and conformance tests on fake-indexeddb (and `node-isolated`,
 *   the few that need a fresh process per file);
 * - `crash`: the journal's crash test (SIGKILLs of a real Chromium), apart
 *   so that `npm test` runs it beside the other suites: it mostly waits;
 * - `convergence`: sync under random operations and faults (full depth only);
 * - `chromium`: the same tests (bar `*.node.test.ts`) plus `*.browser.test.ts`
 *   in real Chromium through Vitest browser mode;
 * - `bench`: `npm run bench`, in Chromium, never part of `npm test`.
 *
 * Two files at a time in each project (Vitest's default here would be
 * cores - 1 = 1), three in the Node projects (`NODE_FILES_AT_ONCE`): no test
 * of these projects measures time.
 */
export default defineConfig({
  build: {
    lib: { entry: "src/index.ts", formats: ["es"], fileName: "index" },
    rollupOptions: {
      external: [/^@langchain\//, "idb", "msgpackr", "ulid"],
    },
  },
  test: {
    globals: true,
    maxWorkers: 2,
    provide: { testDepth: configuredDepth() },
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          environment: "node",
          maxWorkers: NODE_FILES_AT_ONCE,
          include: ["src/**/*.test.ts", "test/suites/**/*.test.ts"],
          exclude: ["**/*.browser.test.ts", CRASH_TEST, ...CONVERGENCE_TESTS, ...FIRST_IMPORT_TESTS],
          setupFiles: ["test/support/setup-node.ts"],
          // A throwaway Postgres for the server round-trip tests (or POSTGRES_URL).
          globalSetup: ["test/support/postgres-global-setup.ts"],
          // Sync tests start server processes: on a loaded machine that alone can take tens of seconds.
          testTimeout: 60_000,
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "node-isolated",
          environment: "node",
          maxWorkers: NODE_FILES_AT_ONCE,
          include: FIRST_IMPORT_TESTS,
          setupFiles: ["test/support/setup-node.ts"],
        },
      },
      {
        extends: true,
        test: { name: "crash", environment: "node", include: [CRASH_TEST], testTimeout: 600_000 },
      },
      {
        extends: true,
        test: {
          name: "convergence",
          environment: "node",
          include: CONVERGENCE_TESTS,
          setupFiles: ["test/support/setup-node.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "chromium",
          include: ["src/**/*.test.ts", "test/suites/**/*.test.ts"],
          exclude: ["**/*.node.test.ts"],
          testTimeout: 60_000,
          // Files share their page (as the Node files share their worker): about 30% less CPU.
          isolate: false,
          browser: inChromium(),
        },
      },
      {
        extends: true,
        test: {
          name: "bench",
          include: [],
          benchmark: { include: ["bench/**/*.bench.ts"] },
          browser: {
            enabled: true,
            headless: true,
            provider: chromium,
            instances: [{ browser: "chromium" }],
          },
        },
      },
    ],
  },
});
