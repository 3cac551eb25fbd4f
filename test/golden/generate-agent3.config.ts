/** Runs test/golden/generate-agent3.ts once, in Node on fake-indexeddb: `npx vitest run -c test/golden/generate-agent3.config.ts`. */
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/golden/generate-agent3.ts"],
    environment: "node",
    setupFiles: ["test/support/setup-node.ts"],
    testTimeout: 120_000,
  },
});
