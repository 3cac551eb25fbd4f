// The sync load bench runs in Node (a sync server, PostgreSQL, fake-indexeddb
// devices), not in the browser like the other suites: `npm run bench -- sync`.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["bench/sync/*.node.ts"],
    environment: "node",
    setupFiles: ["test/support/setup-node.ts"],
    globalSetup: ["test/support/postgres-global-setup.ts"],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    // One worker with gc exposed, so the heap figures are after a full collection.
    pool: "forks",
    execArgv: ["--expose-gc"],
  },
});
