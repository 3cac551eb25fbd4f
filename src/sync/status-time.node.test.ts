/**
 * `SyncStatus.lastSyncStartedAt`: when the last completed full round began,
 * the time a test compares with the moment of a write to know the write is
 * on the server. `lastSyncedAt` and `pending` cannot tell: a round that
 * began before a write can end after it, idle with nothing pending. On the
 * real server (PostgreSQL).
 */
import { describe, expect, it } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import { closeDevices, device, newUser, serverForFile } from "../../test/support/sync/harness.js";
import type { FetchLike } from "./transport.js";

const served = serverForFile();

describe("SyncStatus.lastSyncStartedAt", () => {
  it("is when the last full round began: a write during a round is after it, though the round ends after the write", async () => {
    const { token } = newUser("status-time");
    let during: (() => Promise<void>) | undefined;
    // The write lands while the round pulls, after its push: the round does not carry it.
    const fetchDuring: FetchLike = async (input, init) => {
      if (during && new URL(input).pathname.endsWith("/pull")) {
        const write = during;
        during = undefined;
        await write();
      }
      return fetch(input, init);
    };
    const a = device(served.url, token, { client: { fetch: fetchDuring, live: false } });
    try {
      await chat(a.saver, "t1", ["hello"]);
      const before = Date.now();
      await a.sync.syncNow();
      const first = a.sync.status;
      expect(first.lastSyncStartedAt).toBeGreaterThanOrEqual(before);
      expect(first.lastSyncStartedAt).toBeLessThanOrEqual(first.lastSyncedAt!);

      let wroteAt = 0;
      during = async () => {
        await chat(a.saver, "t2", ["written during the round"]);
        wroteAt = Date.now();
      };
      await a.sync.syncNow();
      const racing = a.sync.status;
      expect(wroteAt).toBeGreaterThan(0);
      // What a test saw before: idle, nothing pending, ended after the write; yet t2 is not pushed.
      expect(racing).toMatchObject({ state: "stopped", pending: 0 });
      expect(racing.lastSyncedAt).toBeGreaterThanOrEqual(wroteAt);
      expect(racing.lastSyncStartedAt).toBeLessThanOrEqual(wroteAt);
      expect((await a.sync.syncNow()).pushed).toBeGreaterThan(0);
      expect(a.sync.status.lastSyncStartedAt).toBeGreaterThanOrEqual(wroteAt);

      // A round of some threads does not push the others: it leaves the time as it was.
      const full = a.sync.status.lastSyncStartedAt;
      await chat(a.saver, "t3", ["not in the next round"]);
      await a.sync.syncNow({ threadIds: ["t1"] });
      expect(a.sync.status.lastSyncStartedAt).toBe(full);
      expect(a.sync.status.lastSyncedAt).toBeGreaterThanOrEqual(full!);
    } finally {
      await closeDevices(a);
    }
  });
});
