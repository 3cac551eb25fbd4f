/**
 * The sync client's own records in `meta` (the pull cursor, each thread's
 * record of what the server holds) edited on disk between two rounds. A
 * damaged part is read as unknown: the round recovers (it sends again what
 * the server may already hold, pulls again from the start) and loses
 * nothing, where before a retyped record failed every round for good.
 * Node (fake-indexeddb) and Chromium.
 */
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, decodeBody, encodeBody } from "./protocol.js";
import { parsePushRequest } from "./protocol-checks.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { putRaw, readStore } from "../../test/support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();

/** A server keeping the checkpoint ids pushed, refusing a `since` as the real one does (not 0 or more). */
function server() {
  const held = new Set<string>();
  const pulls: string[] = [];
  let seq = 0;
  const answer = (body: unknown) =>
    new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } });
  const fetch = async (url: string, init: RequestInit) => {
    const { pathname, searchParams } = new URL(url);
    if (pathname.endsWith("/hello")) return answer({ v: 1, user: "u", keyRecord: null, hasData: seq > 0, seq });
    if (pathname.endsWith("/pull")) {
      const since = searchParams.get("since") ?? "";
      pulls.push(since);
      if (!/^\d{1,15}$/.test(since)) {
        const error = { code: "bad_request", message: 'Query parameter "since" must be an integer.' };
        return new Response(JSON.stringify({ error }), {
          status: 400,
          headers: { "content-type": "application/json" },
        });
      }
      return answer({ v: 1, changes: [], cursor: seq, more: false });
    }
    const request = parsePushRequest(decodeBody(new Uint8Array(init.body as ArrayBuffer)));
    for (const c of request.checkpoints) held.add(c.checkpoint_id);
    seq += request.checkpoints.length;
    return answer({ v: 1, changed: request.checkpoints.length, dropped: 0, seq });
  };
  /** Forgets everything (a database restored from an empty backup). */
  const lose = () => {
    held.clear();
    seq = 0;
  };
  return { fetch, held, pulls, lose };
}

const root = { configurable: { thread_id: "a", checkpoint_ns: "" } };
const META = { source: "loop" as const, step: 0, parents: {} };

/**
 * Syncs checkpoint "1" of thread "a", edits the sync records with `edit`
 * (by record name), then writes checkpoint "2" and syncs again on a saver
 * opened anew.
 */
async function roundAfterEdit(edit: (name: string, value: unknown) => unknown, lost = false) {
  const remote = server();
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("tampered-sync") }));
  await saver.put(root, { ...emptyCheckpoint(), id: "1" }, META, {});
  await new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: remote.fetch }).syncNow();
  await saver.close();
  const meta = await readStore<{ name: string; value: unknown }>(saver.dbName, "meta");
  await putRaw(
    saver.dbName,
    "meta",
    meta.map((row) => ({ name: row.name, value: edit(row.name, row.value) })),
  );
  if (lost) remote.lose();
  const reopened = track(new IndexedDBSaver({ dbName: saver.dbName }));
  await reopened.put(root, { ...emptyCheckpoint(), id: "2" }, META, {});
  remote.pulls.length = 0;
  await new SyncClient({ saver: reopened, url: "http://sync.invalid", token: "t", fetch: remote.fetch }).syncNow();
  return remote;
}

const threadRecord = (value: unknown) => (name: string, stored: unknown) =>
  name.endsWith("\u0000thread\u0000a") ? value : stored;
const cursor = (value: unknown) => (name: string, stored: unknown) => (name.endsWith("\u0000cursor") ? value : stored);

describe("the sync records edited on disk between rounds", () => {
  it("a thread record whose acknowledged removals are not a list: the next round still syncs", async () => {
    // Before: TypeError "number 5 is not iterable" at every round's record update.
    const remote = await roundAfterEdit(threadRecord({ fps: {}, removed: 5 }));
    expect([...remote.held].sort()).toEqual(["1", "2"]);
  });

  it("a thread record retyped, with a server that lost its data: the round starts over and sends all", async () => {
    // Before: forgetScope read `.seen` of the record as it was, and a null one threw at every round.
    const remote = await roundAfterEdit(threadRecord(null), true);
    expect([...remote.held].sort()).toEqual(["1", "2"]);
  });

  for (const value of [Number.NaN, -3]) {
    it(`a cursor of ${value}: the pull starts over from 0, which the server accepts`, async () => {
      // Before: sent as it was (`since=NaN`), which the server refuses, at every round.
      const remote = await roundAfterEdit(cursor(value));
      expect(remote.pulls).toEqual(["0"]);
      expect([...remote.held].sort()).toEqual(["1", "2"]);
    });
  }
});
