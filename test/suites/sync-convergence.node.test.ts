/**
 * Sync converges under random operations and faults (test/support/sync/convergence.ts):
 * 3–8 devices, two server processes on a PostgreSQL of this file's own,
 * connections cut, servers killed, PostgreSQL restarted; invariants after
 * every pulled page and at quiescence. `npm test` runs a bounded set of
 * seeds, `npm run test:full` more; `CONVERGENCE_SEED=n` replays one seed,
 * and `npm run soak:sync` runs thousands.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { byDepth } from "../support/depth.js";
import { runSeed, startWorld, type ConvergenceWorld } from "../support/sync/convergence.js";

const only = process.env.CONVERGENCE_SEED;
const first = Number(process.env.CONVERGENCE_FIRST_SEED ?? 1);
const seeds = only !== undefined ? [Number(only)] : Array.from({ length: byDepth(20, 200) }, (_, i) => first + i);
/** Operations per seed before quiescence. */
const OPS = Number(process.env.CONVERGENCE_OPS ?? byDepth(24, 60));

let world: ConvergenceWorld;

beforeAll(async () => {
  world = await startWorld(seeds);
}, 120_000);

afterAll(async () => {
  await world?.close();
}, 60_000);

describe("sync convergence under random operations and faults", () => {
  it(`${seeds.length} seeds converge, every page whole`, { timeout: seeds.length * 60_000 }, async () => {
    for (const seed of seeds) {
      // PostgreSQL restarts cost about a second: every fourth seed has them.
      await runSeed(world, seed, { ops: OPS, postgresRestarts: seed % 4 === 0 });
    }
  });
});
