/**
 * A push's pending writes on the server (pending-writes.ts) at a fan-out of
 * thousands of tasks: storing them, refusing them when pushed again, and
 * finding the stored writes a push did not carry cost PostgreSQL work linear
 * in the writes. Counted in plan rows (test/support/sync/plan-steps.ts), not
 * timed: a NOT EXISTS over the pushed writes ran as a nested loop, every
 * stored write against every pushed one (5,000 writes took 4.4 s, 20,000 took
 * 45 s), and a time bound failed on a loaded machine. The same push through
 * HTTP, and what each device pulls of it: hardening.node.test.ts.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUser, postgresUrl, wireCheckpoint } from "../../test/support/sync/harness.js";
import { countingPlanSteps } from "../../test/support/sync/plan-steps.js";
import type { WireWrite } from "../sync/protocol.js";
import { heldBeyond, insertWrites } from "./pending-writes.js";
import { setupSchema } from "./schema.js";
import { cpKey } from "./sql.js";

let pool: pg.Pool;

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await postgresUrl(), max: 1 });
  await setupSchema(pool);
}, 60_000);

afterAll(() => pool.end());

describe("sync server: a checkpoint with thousands of pending writes", () => {
  it("stores them, refuses them pushed again and finds one the push lacks, in plan rows linear in them", async () => {
    const count = 3000;
    const writes: WireWrite[] = Array.from({ length: count }, (_, i) => ({
      task_id: `task-${i}`,
      idx: 0,
      channel: "results",
      task_path: "",
      value: ["msgpack", new Uint8Array([i & 0x7f])],
    }));
    const pushed = wireCheckpoint("t", writes);
    const parts = [[pushed.thread_id, pushed.checkpoint_ns, pushed.checkpoint_id]];
    const key = cpKey(pushed.thread_id, pushed.checkpoint_ns, pushed.checkpoint_id);
    const { user } = newUser("fan-out");
    const connection = await pool.connect();
    try {
      await connection.query("BEGIN");
      const { client, steps } = countingPlanSteps(connection);
      const first = await insertWrites(client, user, [pushed]);
      expect(first.changed).toHaveLength(count);
      expect(await heldBeyond(client, user, parts, [pushed])).toEqual(new Set());
      // A retry after a cut: every write refused, each compared with the stored one.
      const again = await insertWrites(client, user, [pushed]);
      expect({ changed: again.changed, diverged: again.diverged }).toEqual({ changed: [], diverged: new Set() });
      // Another device's push that lacks one of them.
      expect(await heldBeyond(client, user, parts, [wireCheckpoint("t", writes.slice(1))])).toEqual(new Set([key]));
      // Each statement: a few rows per write (an index lookup each), not one per pair (count² = 9 M).
      expect(steps.length).toBeGreaterThanOrEqual(4);
      for (const [i, rows] of steps.entries()) expect(rows, `statement ${i}`).toBeLessThan(10 * count);
    } finally {
      await connection.query("ROLLBACK");
      connection.release();
    }
  });
});
