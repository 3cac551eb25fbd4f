/**
 * The agent server's own database edited between two requests, as someone
 * holding the profile's files (or another app of the origin sharing the
 * database name) could: rows truncated, retyped or deleted. The server must
 * answer a clear error or leave the damaged row aside, and never delete,
 * cancel or hang on another thread's data.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { request, withRaw } from "../../test/support/raw-idb.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

/** Runs `work` on one store of the agent database beside `dbName`'s saver, read-write. */
function editAgentStore(dbName: string, store: string, work: (rows: IDBObjectStore) => IDBRequest): Promise<unknown> {
  return withRaw(`${dbName}-agent-threads`, (db) =>
    request(work(db.transaction(store, "readwrite").objectStore(store))),
  );
}

describe("the agent server's database, edited between requests", () => {
  it("a leftover record truncated to its thread id deletes no thread the saver holds without a record", async () => {
    const { server, saver, client, dbName } = await openServer("tampered-leftover");
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human("keep me") });
    await server.close();
    // The thread record dropped (the records can be, checkpoints untouched), and a leftover row
    // without its creation time: undefined (no record) equalled undefined (no time), and the
    // next server to start erased the thread's checkpoints.
    await editAgentStore(dbName, "threads", (rows) => rows.delete(thread.thread_id));
    await editAgentStore(dbName, "leftover_threads", (rows) => rows.put({ thread_id: thread.thread_id }));
    await openServer("tampered-leftover", false, { saver });
    expect(await saver.getTuple({ configurable: { thread_id: thread.thread_id } })).toBeDefined();
    // The damaged row is dropped, not looked at again at each start.
    expect(await editAgentStore(dbName, "leftover_threads", (rows) => rows.count())).toBe(0);
  });
});
