/** Runs test/golden/generate-export-paths.ts once, in Node on fake-indexeddb: `npx vitest run -c test/golden/generate-export-paths.config.ts`. */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/golden/generate-export-paths.ts"],
    environment: "node",
    setupFiles: ["test/support/setup-node.ts"],
    testTimeout: 120_000,
  },
});
