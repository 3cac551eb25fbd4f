/**
 * The test depth as the Vitest configs read it (in Node, from the
 * environment): TEST_DEPTH=full for `npm run test:full`, unset or "fast" for
 * `npm test`. Test files read it through test/support/depth.ts.
 */
import type { TestDepth } from "./depth.js";

/** TEST_DEPTH, checked: a misspelt depth is an error, not a silent fast run. */
export function configuredDepth(): TestDepth {
  const value = process.env.TEST_DEPTH ?? "fast";
  if (value !== "fast" && value !== "full") throw new Error(`TEST_DEPTH must be "fast" or "full", not "${value}".`);
  return value;
}
