/**
 * A page of `GET /v1/threads` reads about its own threads, whatever else the
 * user holds: the list is in the devices' order of thread ids (by UTF-16
 * code unit), which is not the primary key's. Real server on loopback, real
 * PostgreSQL; rows read are counted by EXPLAIN ANALYZE of the list's query.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { inspector, newUser, serverForFile } from "../../test/support/sync/harness.js";
import type { ThreadsResponse } from "../sync/protocol.js";
import { decodeBody } from "../sync/protocol.js";
import { threadsQuery } from "./reads.js";

const served = serverForFile();
let admin: pg.Pool;
beforeAll(async () => {
  admin = await inspector();
}, 60_000);
afterAll(() => admin?.end());

const THREADS = 3000;
const CHECKPOINTS = 5;

/** Thread `i`'s id: some hold U+E000 or U+1F600, which devices and PostgreSQL's "C" order differently. */
const idSql = `'t-' || (i % 10) || CASE WHEN i % 7 = 0 THEN chr(57344) WHEN i % 11 = 0 THEN chr(128512) ELSE '' END || i`;
const idOf = (i: number) => `t-${i % 10}${i % 7 === 0 ? "\uE000" : i % 11 === 0 ? "\u{1F600}" : ""}${i}`;

/** A plan node of EXPLAIN (FORMAT JSON), as far as this file reads it. */
interface PlanNode {
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

/** The rows the plan's nodes read from `lgsync_checkpoints` (returned or filtered out), over all their loops. */
function checkpointRowsRead(node: PlanNode): number {
  const own =
    node["Relation Name"] === "lgsync_checkpoints"
      ? (node["Actual Rows"] + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0)) *
        node["Actual Loops"]
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + checkpointRowsRead(child), 0);
}

describe("sync server: the list of threads of a user with many", () => {
  const { user, token } = newUser("many-threads");
  beforeAll(async () => {
    await admin.query("INSERT INTO lgsync_users (user_id, seq) VALUES ($1, $2)", [user, THREADS * CHECKPOINTS]);
    await admin.query(
      `INSERT INTO lgsync_checkpoints (user_id, thread_id, checkpoint_ns, checkpoint_id, checkpoint_type, checkpoint,
         metadata_type, metadata, channel_versions, seq)
       SELECT $1, ${idSql}, '', '1f0aaaaa-' || k, 'msgpack', '\\x80', 'msgpack', '\\x80', '{}', i * ${CHECKPOINTS} + k
       FROM generate_series(1, ${THREADS}) AS i, generate_series(0, ${CHECKPOINTS - 1}) AS k`,
      [user],
    );
    await admin.query("ANALYZE lgsync_checkpoints");
  }, 60_000);

  it("reads a page's threads, not every checkpoint of the user", async () => {
    for (const after of [undefined, idOf(1500)]) {
      const query = threadsQuery(user, 101, after);
      const explained = await admin.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${query.text}`,
        query.values,
      );
      // Each thread of the page: a step to it and its 5 checkpoints. Before, every page grouped all 15,000
      // checkpoints of the user to sort their threads (65 ms of 107 a page at 3,000 threads, at any limit).
      expect(checkpointRowsRead(explained.rows[0]!["QUERY PLAN"][0].Plan)).toBeLessThan(8 * 101);
    }
  });

  it("pages through every thread once, in the devices' order", async () => {
    const listed: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const query = `?limit=700${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`;
      const response = await fetch(`${served.url}/v1/threads${query}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      const page = decodeBody(new Uint8Array(await response.arrayBuffer())) as unknown as ThreadsResponse;
      for (const thread of page.threads) {
        expect([thread.checkpoints, thread.latest_checkpoint_id]).toEqual([CHECKPOINTS, `1f0aaaaa-${CHECKPOINTS - 1}`]);
        listed.push(thread.thread_id);
      }
      after = page.next;
      if (after === undefined) break;
    }
    expect(listed).toEqual(Array.from({ length: THREADS }, (_, i) => idOf(i + 1)).sort());
  });
});
