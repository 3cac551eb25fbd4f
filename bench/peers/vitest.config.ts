// The PGlite peer's conformance run, in Node (`npm run bench -- pglite-conformance`):
// bench material, not part of npm test.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["bench/peers/*.conformance.node.ts"],
    environment: "node",
    globals: true,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
