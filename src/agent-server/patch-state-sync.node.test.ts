/**
 * `threads.patchState` on a saver that syncs between devices: the patch
 * rewrites the latest checkpoint in place, and the sync server stores a
 * checkpoint once (its rows are immutable), so a patch there would stay on
 * the device that made it, silently. It is refused instead (409, saying why
 * and what to do), with nothing written: for a saver given to a
 * `SyncClient` (before its first round too) and for a database that has
 * synced (opened again without one). Through the real sync server on
 * PostgreSQL, two devices. Each case answered 204 before the refusal, and
 * device 2 never saw the metadata.
 */
import { IDBFactory } from "fake-indexeddb";
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { rawAccessOf } from "../saver/raw-access.js";
import { SyncClient } from "../sync/client.js";
import type { CheckpointRow } from "../rows/shapes.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { closeDevices, device, newUser, serverForFile } from "../../test/support/sync/harness.js";

const served = serverForFile();

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

/** The latest root checkpoint's row as stored (its bytes and stamp: a put again changes both). */
async function latestRow(saver: IndexedDBSaver, threadId: string): Promise<CheckpointRow> {
  const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  const id = tuple!.config.configurable!.checkpoint_id as string;
  const access = rawAccessOf(saver)!;
  const row = await access.db.read(
    ["checkpoints"],
    (tx) => tx.objectStore("checkpoints").get([threadId, "", id]),
    "read a row",
  );
  return row!;
}

/** The answer to PATCH /threads/:id/state, as status and body text. */
async function patch(server: { fetch: typeof fetch }, threadId: string, metadata: unknown): Promise<string> {
  const res = await server.fetch(`http://local.invalid/threads/${threadId}/state`, {
    method: "PATCH",
    body: JSON.stringify({ metadata }),
  });
  return `${res.status} ${await res.text()}`;
}

describe("threads.patchState on a saver that syncs", () => {
  it("refuses (409) on device 1, writing nothing; both devices keep the metadata the server holds", async () => {
    const { token } = newUser("patch");
    const one = device(served.url, token);
    const two = device(served.url, token);
    try {
      const { client, server } = await openServer("patch-sync", false, { saver: one.saver, indexedDB: one.factory });
      const { thread_id } = await client.threads.create();
      await client.runs.wait(thread_id, "agent", { input: human("hi") });
      await one.sync.syncNow();
      await two.sync.syncNow();
      const before = await latestRow(one.saver, thread_id);
      const stateBefore = await client.threads.getState(thread_id);
      const metadataBefore = (await one.saver.getTuple({ configurable: { thread_id } }))?.metadata;

      const answer = await patch(server, thread_id, { reviewed: "yes" });
      expect(answer).toMatch(/^409 /);
      expect(answer).toContain("SyncClient");
      expect(answer).toContain("Nothing was patched");

      // Not put again: the same bytes and stamp (a put again re-encodes and stamps it).
      expect(await latestRow(one.saver, thread_id)).toEqual(before);
      expect((await client.threads.getState(thread_id)).metadata).toEqual(stateBefore.metadata);
      await one.sync.syncNow();
      await two.sync.syncNow();
      const onTwo = await two.saver.getTuple({ configurable: { thread_id } });
      expect(onTwo?.checkpoint.id).toBe(before.checkpoint_id);
      expect(onTwo?.metadata).toEqual(metadataBefore);
    } finally {
      await closeServers();
      await closeDevices(one, two);
    }
  });

  it("refuses on a database that has synced, opened again with no SyncClient in the page", async () => {
    const { token } = newUser("patch-reopened");
    const one = device(served.url, token);
    const { client } = await openServer("patch-sync-first", false, { saver: one.saver, indexedDB: one.factory });
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("hi") });
    await one.sync.syncNow();
    await closeServers();
    await closeDevices(one);

    const again = new IndexedDBSaver({ dbName: one.saver.dbName, indexedDB: one.factory });
    const reopened = await openServer("patch-sync-again", false, { saver: again, indexedDB: one.factory });
    const before = await latestRow(again, thread_id);
    const answer = await patch(reopened.server, thread_id, { reviewed: "yes" });
    expect(answer).toMatch(/^409 /);
    expect(answer).toContain("synced");
    expect(await latestRow(again, thread_id)).toEqual(before);
  });

  it("refuses on a saver given to a SyncClient that has not synced yet; a saver that never syncs still patches", async () => {
    const factory = new IDBFactory();
    const saver = new IndexedDBSaver({ dbName: "patch-sync-unsynced", indexedDB: factory });
    const { client, server } = await openServer("patch-sync-unsynced", false, { saver, indexedDB: factory });
    const { thread_id } = await client.threads.create();
    await client.runs.wait(thread_id, "agent", { input: human("hi") });
    expect(await patch(server, thread_id, { local: 1 })).toMatch(/^204 /);
    expect((await client.threads.getState(thread_id)).metadata).toMatchObject({ local: 1 });

    // No round made (nothing listens at this URL): being given to one is enough.
    const sync = new SyncClient({ saver, url: "http://127.0.0.1:9", token: "unused" });
    try {
      const before = await latestRow(saver, thread_id);
      expect(await patch(server, thread_id, { local: 2 })).toMatch(/^409 /);
      expect(await latestRow(saver, thread_id)).toEqual(before);
    } finally {
      sync.close();
    }
  });
});
