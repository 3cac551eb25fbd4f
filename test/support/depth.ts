/**
 * How deep the heavy tests go. `npm test` runs them at the fast depth;
 * `npm run test:full` (TEST_DEPTH=full) at the full depth, before each
 * release. The configs hand the depth to every project, Node and browsers
 * alike, with `provide("testDepth")`, so one value decides everywhere.
 * docs/testing.md ("Fast and full depths") says which tests have two depths
 * and why the fast one still catches what the test is for.
 */
import { inject } from "vitest";

/** The two depths: what `npm test` runs, and what `npm run test:full` runs. */
export type TestDepth = "fast" | "full";

declare module "vitest" {
  export interface ProvidedContext {
    testDepth: TestDepth;
  }
}

/** The depth of this run, as the config provided it. */
export const testDepth: TestDepth = inject("testDepth") === "full" ? "full" : "fast";

/** `fast` under `npm test`, `full` under `npm run test:full`. */
export function byDepth<T>(fast: T, full: T): T {
  return testDepth === "full" ? full : fast;
}
