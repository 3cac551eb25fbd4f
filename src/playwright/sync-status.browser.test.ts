/**
 * The status recorder the `./playwright` helpers install in pages, against a
 * real SyncClient in Chromium: what the app's client posts (here: its server
 * cannot be reached) is what a test reads, from the same tab and from another
 * document of the origin (a same-origin iframe stands in for a second tab).
 */
import { describe, expect, it } from "vitest";
import { crossTabName } from "../core/channel.js";
import { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "../sync.js";
import { SYNC_STATUS_KEY, recordSyncStatus, type PageSyncStatus } from "./sync-status.js";

const unique = () => `playwright-sync-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

async function until<T>(read: () => T | undefined, timeout = 5_000): Promise<T> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("nothing recorded in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("recordSyncStatus", () => {
  it("records the status the app's SyncClient posts, in its own tab and in another document", async () => {
    const dbName = unique();
    const channel = crossTabName({ kind: "sync-status", dbName });
    recordSyncStatus({ key: SYNC_STATUS_KEY, channel });
    recordSyncStatus({ key: SYNC_STATUS_KEY, channel }); // twice (two init scripts): one listener
    const frame = document.createElement("iframe");
    document.body.append(frame);
    const other = frame.contentWindow as unknown as typeof globalThis;
    other.eval(`(${recordSyncStatus.toString()})(${JSON.stringify({ key: SYNC_STATUS_KEY, channel })})`);
    const read = (scope: typeof globalThis) =>
      ((scope as unknown as Record<string, Record<string, PageSyncStatus | null>>)[SYNC_STATUS_KEY]?.[channel] ??
        undefined) as PageSyncStatus | undefined;
    expect(read(globalThis)).toBeUndefined();

    const saver = new IndexedDBSaver({ dbName });
    // Port 9 (discard) has no server: the round fails the way a dropped network does.
    const sync = new SyncClient({ saver, url: "http://127.0.0.1:9", token: "t" });
    try {
      await expect(sync.syncNow()).rejects.toThrow();
      const here = await until(() => (read(globalThis)?.state === sync.status.state ? read(globalThis) : undefined));
      const { receivedAt, ...status } = here;
      expect(status).toEqual({ ...sync.status });
      expect(["offline", "error"]).toContain(status.state);
      expect(receivedAt).toBeGreaterThan(Date.now() - 10_000);
      expect((await until(() => read(other)))?.state).toBe(status.state);
    } finally {
      sync.stop();
      await saver.close();
      frame.remove();
    }
  });
});
