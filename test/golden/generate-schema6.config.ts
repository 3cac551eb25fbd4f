/** Runs test/golden/generate-schema6.ts once, in Node on fake-indexeddb: `npx vitest run -c test/golden/generate-schema6.config.ts`. */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/golden/generate-schema6.ts"],
    environment: "node",
    setupFiles: ["test/support/setup-node.ts"],
    testTimeout: 120_000,
  },
});
