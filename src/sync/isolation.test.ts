/**
 * One bad thread does not stop a device's sync: a thread the server refuses
 * is skipped with its reason while the other threads of the same batch
 * reach the server, and a thread stored under an id the protocol refuses
 * (written before the saver refused such ids) is never sent and is named in
 * the status. Runs without PostgreSQL: the "server" is a fetch function
 * that refuses pushes holding thread "refused" as the real one refuses bad
 * rows (400 `bad_request`, nothing stored). Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import type { CheckpointRow } from "../rows/shapes.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, decodeBody, encodeBody } from "./protocol.js";
import { parsePushRequest } from "./protocol-checks.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { putRaw, readStore } from "../../test/support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();

/** A server that stores what it accepts, checks bodies as the real one does, and refuses thread "refused". */
function strict(stored: Set<string>): (url: string, init: RequestInit) => Promise<Response> {
  const answer = (body: unknown) =>
    new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } });
  const refuse = (message: string) =>
    new Response(JSON.stringify({ error: { code: "bad_request", message } }), {
      status: 400,
      headers: { "content-type": "application/json" },
    });
  return async (url, init) => {
    const path = new URL(url).pathname;
    if (path.endsWith("/hello")) return answer({ v: 1, user: "u", keyRecord: null, hasData: false, seq: 0 });
    if (path.endsWith("/pull")) return answer({ v: 1, changes: [], cursor: 0, more: false });
    if (!path.endsWith("/push")) return new Response("not found", { status: 404 });
    let request;
    try {
      request = parsePushRequest(decodeBody(new Uint8Array(init.body as ArrayBuffer)));
    } catch (error) {
      return refuse((error as Error).message);
    }
    if (request.checkpoints.some((c) => c.thread_id === "refused")) return refuse('thread "refused" is not welcome.');
    for (const c of request.checkpoints) stored.add(`${c.thread_id}/${c.checkpoint_id}`);
    return answer({ v: 1, changed: request.checkpoints.length, dropped: 0, seq: 1 });
  };
}

const root = (threadId: string) => ({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
const META = { source: "loop" as const, step: 0, parents: {} };

describe("sync failures stay with their thread", () => {
  it("a thread the server refuses is skipped, the others of its batch still sync", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("isolation") }));
    for (const threadId of ["a", "refused", "b"])
      await saver.put(root(threadId), { ...emptyCheckpoint(), id: "1" }, META, {});
    const stored = new Set<string>();
    const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: strict(stored) });
    const result = await sync.syncNow();
    expect([...stored].sort()).toEqual(["a/1", "b/1"]);
    expect(result.pushed).toBe(2);
    expect(result.skipped).toEqual([
      {
        threadId: "refused",
        code: "refused",
        reason: expect.stringMatching(/not welcome/),
        message: expect.stringMatching(/refused this conversation/),
      },
    ]);
    expect(sync.status.skipped?.map((s) => s.threadId)).toEqual(["refused"]);
    // The next round tries the refused thread again, and only it.
    stored.clear();
    expect((await sync.syncNow()).skipped.map((s) => s.threadId)).toEqual(["refused"]);
    expect(stored.size).toBe(0);
  });

  it("a thread stored under an id the protocol refuses is named and never sent; the others sync", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("isolation") }));
    await saver.put(root("a"), { ...emptyCheckpoint(), id: "1" }, META, {});
    const [row] = await readStore<CheckpointRow>(saver.dbName, "checkpoints");
    await saver.close();
    // As a database written before the saver refused such ids holds it.
    await putRaw(saver.dbName, "checkpoints", [{ ...row, thread_id: "x\u0000y" }]);
    const reopened = track(new IndexedDBSaver({ dbName: saver.dbName }));
    const stored = new Set<string>();
    const sync = new SyncClient({ saver: reopened, url: "http://sync.invalid", token: "t", fetch: strict(stored) });
    const result = await sync.syncNow();
    expect([...stored]).toEqual(["a/1"]);
    expect(result.skipped).toEqual([
      {
        threadId: "x\u0000y",
        code: "invalid_id",
        reason: expect.stringMatching(/U\+0000/),
        message: expect.stringMatching(/cannot store/),
      },
    ]);
  });
});
