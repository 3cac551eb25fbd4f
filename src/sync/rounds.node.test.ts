/**
 * A round costs what changed (changes.ts): after the first round, a round
 * reads only the checkpoints stamped since the last one started (a turn, a
 * pending write added to an old checkpoint, a copy, what a pull stored), not
 * every thread; a clock set back past the record, or a record that is not
 * this code's, scans everything again. On the real server (PostgreSQL).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import { checkpointIds, closeDevices, device, newUser, serverForFile, state } from "../../test/support/sync/harness.js";
import { rawAccessOf } from "../saver/raw-access.js";
import { SCAN_SLACK_MS, scanName } from "./changes.js";
import { storePut } from "../idb/requests.js";
import { decodeBody, type PushRequest } from "./protocol.js";
import type { FetchLike } from "./transport.js";
import type { SyncResult } from "./engine.js";

const served = serverForFile();
const THREADS = 60;

// A round looks again at what was stamped up to SCAN_SLACK_MS before the last one started (clock
// adjustments): the page's clock is stepped past that between the steps here, so each round is
// measured against what changed since the last alone.
beforeAll(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
});
afterAll(() => {
  vi.useRealTimers();
});
const later = () => vi.setSystemTime(Date.now() + SCAN_SLACK_MS + 1_000);

/** A round, after the clock has moved on. */
const round = (sync: { syncNow(): Promise<SyncResult> }) => {
  later();
  return sync.syncNow();
};

/** Every checkpoint of the database (what a full scan reads). */
async function checkpointCount(saver: Parameters<typeof rawAccessOf>[0]): Promise<number> {
  const access = rawAccessOf(saver)!;
  return access.db.read(["checkpoints"], (tx) => tx.objectStore("checkpoints").count(), "count");
}

describe("a sync round reads what changed", () => {
  it("nothing new: no checkpoint read; one turn: its checkpoints; a write added to an old checkpoint: that one", async () => {
    const { token } = newUser("rounds");
    const a = device(served.url, token, { dbName: "rounds-a", client: { app: "rounds" } });
    const b = device(served.url, token, { dbName: "rounds-b", client: { app: "rounds" } });
    await chat(a.saver, "seed", ["hello"]);
    // Many threads at the cost of few graph runs: copies are stored (and stamped) as new rows.
    for (let i = 0; i < THREADS; i++) await a.saver.copyThread("seed", `t${i}`);
    const total = await checkpointCount(a.saver);
    expect(total).toBeGreaterThan(THREADS * 2);

    // The first round has no record: it reads every checkpoint, and pushes them all.
    const first = await round(a.sync);
    expect(first).toMatchObject({ scanned: total, pushed: total });
    // Nothing new: nothing read.
    expect(await round(a.sync)).toMatchObject({ scanned: 0, pushed: 0 });

    // One turn on one thread: its new checkpoints are read and pushed, no other.
    const before = (await checkpointIds(a.saver, "t7")).length;
    await chat(a.saver, "t7", ["again"]);
    const added = (await checkpointIds(a.saver, "t7")).length - before;
    expect(added).toBeGreaterThan(0);
    expect(await round(a.sync)).toMatchObject({ scanned: added, pushed: added });

    // A pending write added to an old checkpoint (no new checkpoint): read and pushed.
    const oldest = (await checkpointIds(a.saver, "t3"))[0]!.split("|")[1];
    await a.saver.putWrites(
      { configurable: { thread_id: "t3", checkpoint_ns: "", checkpoint_id: oldest } },
      [["messages", "late"]],
      "late-task",
    );
    expect(await round(a.sync)).toMatchObject({ scanned: 1, pushed: 1 });
    expect(await round(a.sync)).toMatchObject({ scanned: 0, pushed: 0 });
    // A copy: stored as new rows, whatever the source's stamps.
    await a.saver.copyThread("t7", "t7-copy");
    const copied = (await checkpointIds(a.saver, "t7-copy")).length;
    expect(await round(a.sync)).toMatchObject({ scanned: copied, pushed: copied });

    // B's first round scans its empty database and pulls everything; its next round reads what
    // the pull stored (stamped when stored) and pushes none of it back.
    expect(await round(b.sync)).toMatchObject({ scanned: 0, pulled: total + added + copied });
    expect(await round(b.sync)).toMatchObject({ scanned: total + added + copied, pushed: 0 });
    expect(await round(b.sync)).toMatchObject({ scanned: 0, pushed: 0 });
    expect(await state(b.saver, "t7")).toEqual(await state(a.saver, "t7"));
    await closeDevices(a, b);
  });

  it("a clock set back past the record, or a record that is not this code's, scans everything", async () => {
    const { token } = newUser("rounds-clock");
    const a = device(served.url, token, { dbName: "rounds-clock", client: { app: "rounds" } });
    await chat(a.saver, "t", ["one", "two"]);
    const total = await checkpointCount(a.saver);
    await round(a.sync);
    expect(await round(a.sync)).toMatchObject({ scanned: 0 });
    const access = rawAccessOf(a.saver)!;
    const records = await access.db.read(
      ["meta"],
      async (tx) => (await tx.objectStore("meta").getAll()).filter((row) => row.name.endsWith("\u0000scan")),
      "read",
    );
    expect(records).toHaveLength(1);
    expect(records[0]!.name).toBe(scanName(records[0]!.name.slice(5, -5), undefined));
    const rewrite = (value: unknown) =>
      access.write(["meta"], (tx) => storePut(tx.objectStore("meta"), { name: records[0]!.name, value }), "edit");
    // Recorded in the future: this clock went back.
    await rewrite({ since: Date.now() + 3_600_000, retry: [] });
    expect(await round(a.sync)).toMatchObject({ scanned: total, pushed: 0 });
    expect(await round(a.sync)).toMatchObject({ scanned: 0 });
    await rewrite("not a record");
    expect(await round(a.sync)).toMatchObject({ scanned: total, pushed: 0 });
    await closeDevices(a);
  });

  it("a thread the server refused is read again next round, whatever its stamps", async () => {
    const { token } = newUser("rounds-refused");
    let refusing = true;
    const fetch: FetchLike = async (input, init) => {
      if (refusing && input.includes("/push")) {
        const body = decodeBody(new Uint8Array(init.body as ArrayBuffer)) as PushRequest;
        if (body.checkpoints.some((c) => c.thread_id === "refused"))
          return new Response(JSON.stringify({ error: { code: "checkpoint_too_large", message: "not now" } }), {
            status: 413,
          });
      }
      return globalThis.fetch(input, init);
    };
    const a = device(served.url, token, { dbName: "rounds-refused", client: { app: "rounds", fetch } });
    await chat(a.saver, "refused", ["one"]);
    await chat(a.saver, "fine", ["one"]);
    const refusedCount = (await checkpointIds(a.saver, "refused")).length;
    const first = await round(a.sync);
    expect(first.skipped.map((s) => s.threadId)).toEqual(["refused"]);
    refusing = false;
    expect(await round(a.sync)).toMatchObject({ scanned: refusedCount, pushed: refusedCount, skipped: [] });
    expect(await round(a.sync)).toMatchObject({ scanned: 0, pushed: 0 });
    await closeDevices(a);
  });
});
