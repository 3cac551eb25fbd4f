/**
 * A server that replays what the device itself pushed earlier (a hostile
 * server, or a man-in-the-middle on plain http, needs no key for it) must
 * not roll the device back: a replaced special write stays replaced, and a
 * checkpoint `deleteForRuns` or `prune` removed stays removed. Runs without
 * PostgreSQL: the "server" is a fetch function that answers every pull with
 * the first push it received. Node (fake-indexeddb) and Chromium.
 */
import { INTERRUPT, emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it, vi } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "./client.js";
import { SCAN_SLACK_MS } from "./changes.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody, type PushRequest } from "./protocol.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

/**
 * A server that keeps the first push and sends it back on every pull, as new changes. `seqOnHello`:
 * the sequence its hello claims, 0 for one that says it lost everything (every round starts over).
 */
function replaying(seqOnHello?: number): (url: string, init: RequestInit) => Promise<Response> {
  let first: PushRequest | undefined;
  let seq = 0;
  return async (url, init) => {
    const path = new URL(url).pathname;
    let body: unknown;
    if (path.endsWith("/hello"))
      body = { v: 1, user: "u", keyRecord: null, hasData: first !== undefined, seq: seqOnHello ?? seq };
    else if (path.endsWith("/push")) {
      first ??= decodeBody(new Uint8Array(init.body as ArrayBuffer)) as PushRequest;
      body = { v: 1, changed: 0, dropped: 0, seq };
    } else if (path.endsWith("/pull")) {
      const since = Number(new URL(url).searchParams.get("since"));
      const changes = since >= seq + 1 ? [] : (first?.checkpoints ?? []);
      seq = Math.max(seq, since) + 1;
      body = {
        v: SYNC_PROTOCOL_VERSION,
        changes: changes.map((checkpoint) => ({ kind: "checkpoint", seq, checkpoint })),
        cursor: changes.length > 0 ? seq : since,
        more: false,
      };
    } else return new Response("not found", { status: 404 });
    return new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } });
  };
}

/** A saver with a client on a replaying server. */
function device(seqOnHello?: number): { saver: IndexedDBSaver; sync: SyncClient } {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("rollback") }));
  const fetch = replaying(seqOnHello);
  return { saver, sync: new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch }) };
}

const metadata = (step: number, run_id: string) =>
  ({ source: "loop", step, parents: {}, run_id }) as CheckpointMetadata;

/** Puts checkpoint `id` of run `runId` on top of `parent` (thread "t"). */
function put(saver: IndexedDBSaver, parent: RunnableConfig | undefined, id: string, runId: string) {
  const config = parent ?? { configurable: { thread_id: "t", checkpoint_ns: "" } };
  return saver.put(config, { ...emptyCheckpoint(), id }, metadata(Number(id), runId), {});
}

describe("a server replaying the device's own earlier pushes", () => {
  it.each([
    ["", undefined],
    [", also when its hello claims it lost everything (the device starts over with it)", 0],
  ])("does not put a replaced __interrupt__ write back%s", async (_, seqOnHello) => {
    const { saver, sync } = device(seqOnHello);
    const c1 = await put(saver, undefined, "1", "r1");
    await saver.putWrites(c1, [[INTERRUPT, "first question"]], "task");
    await sync.syncNow();
    await saver.putWrites(c1, [[INTERRUPT, "second question"]], "task");
    // Later than the slack in which a round looks again at what was stamped before the last one
    // (changes.ts): the third round finds the checkpoint only through the pull's note of the replay.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + SCAN_SLACK_MS + 1_000);
      await sync.syncNow(); // pushes the second question, pulls the first back
      const writes = (await saver.getTuple(c1))?.pendingWrites ?? [];
      expect(writes.map(([, , value]) => value)).toEqual(["second question"]);
      // The next round pushes the newer value again (the server holds an older one), and still keeps it.
      vi.setSystemTime(Date.now() + SCAN_SLACK_MS + 1_000);
      expect((await sync.syncNow()).pushed).toBe(1);
    } finally {
      vi.useRealTimers();
    }
    expect((await saver.getTuple(c1))?.pendingWrites?.map(([, , value]) => value)).toEqual(["second question"]);
  });

  it("does not bring back checkpoints deleteForRuns rolled back, nor make them the head", async () => {
    const { saver, sync } = device();
    const c1 = await put(saver, undefined, "1", "r1");
    await put(saver, c1, "2", "r2");
    await sync.syncNow();
    await saver.deleteForRuns(["r2"], { threadId: "t" });
    await sync.syncNow();
    expect((await saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint.id).toBe("1");
    expect(await saver.getTuple({ configurable: { thread_id: "t", checkpoint_id: "2" } })).toBeUndefined();
  });

  it("does not bring back checkpoints prune removed", async () => {
    const { saver, sync } = device();
    const c1 = await put(saver, undefined, "1", "r1");
    const c2 = await put(saver, c1, "2", "r2");
    await put(saver, c2, "3", "r3");
    await sync.syncNow();
    await saver.prune(["t"]);
    await sync.syncNow();
    const ids = [];
    for await (const tuple of saver.list({ configurable: { thread_id: "t" } })) ids.push(tuple.checkpoint.id);
    expect(ids).toEqual(["3"]);
  });
});
