/**
 * A run's stream events beside an encrypting saver (event-seal.ts): what a
 * run streamed (its input's messages among it) is sealed by the saver's
 * serializer for its row, so the agent database read raw holds none of it in
 * clear; the run still replays, from this server or another on the same
 * database; a sealed event edited, moved or renamed, one sealed under a
 * retired data key, and one planted in clear are left out of a replay.
 * Beside a plain saver, rows are the events as sent, as before.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";
import { request, withRaw } from "../../test/support/raw-idb.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { freshDbName } from "../../test/support/databases.js";

afterEach(closeServers);

const SECRET = "my-secret-diagnosis";
const human = (content: string) => ({ messages: [{ type: "human", content }] });
const key = () => EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(5));

/** Every row of every store of the agent database beside `dbName`'s saver. */
function agentRows(dbName: string): Promise<Record<string, unknown[]>> {
  return withRaw(`${dbName}-agent-threads`, async (db) => {
    const rows: Record<string, unknown[]> = {};
    for (const store of db.objectStoreNames) {
      rows[store] = await request(db.transaction(store).objectStore(store).getAll());
    }
    return rows;
  });
}

/** Every string in `value`, bytes read as UTF-8 and as Latin-1 too (a marker in clear bytes shows either way). */
function textsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value instanceof Uint8Array) return [new TextDecoder().decode(value), String.fromCharCode(...value)];
  if (Array.isArray(value)) return value.flatMap(textsIn);
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(textsIn);
  return [];
}

/** Puts (or deletes, with `undefined`) rows of the agent database's `run_events`. */
function editEvents(dbName: string, work: (rows: IDBObjectStore) => IDBRequest): Promise<unknown> {
  return withRaw(`${dbName}-agent-threads`, (db) =>
    request(work(db.transaction("run_events", "readwrite").objectStore("run_events"))),
  );
}

/** A server on an encrypted saver, a run of it that sent `SECRET`, and a replay of that run read from disk. */
async function encryptedRun(prefix: string) {
  const dbName = freshDbName(prefix);
  const { client } = await openServer(prefix, false, { saver: new IndexedDBSaver({ dbName, serde: await key() }) });
  const thread = await client.threads.create();
  // Its every kind of event: `values` and `updates` with the input, `messages` with the answer's tokens.
  const run = await client.runs.create(thread.thread_id, "agent", {
    input: human(SECRET),
    streamMode: ["values", "updates", "messages-tuple", "custom"],
  });
  await client.runs.join(thread.thread_id, run.run_id);
  // Another tab's server on the same database (its own saver, the same key): it has only the stored events.
  const other = await openServer(prefix, false, { saver: new IndexedDBSaver({ dbName, serde: await key() }) });
  const replay = async (lastEventId?: string) => {
    const parts: { event: string; data: unknown }[] = [];
    const stream = other.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId });
    for await (const { event, data } of stream) parts.push({ event, data });
    return parts;
  };
  return { dbName, saver: other.saver, client: other.client, threadId: thread.thread_id, runId: run.run_id, replay };
}

describe("run events beside an encrypting saver", () => {
  it("are sealed: the agent database holds no clear text of the run's input, and the run replays", async () => {
    const { dbName, runId, replay } = await encryptedRun("sealed-events");
    const rows = await agentRows(dbName);
    expect(rows.run_events!.length).toBeGreaterThan(3);
    // Before: the `values` and `messages` events held the input as sent, in clear.
    expect(textsIn(rows).filter((text) => text.includes(SECRET))).toEqual([]);
    for (const row of rows.run_events as Record<string, unknown>[]) {
      expect(row).not.toHaveProperty("data");
      expect(row).toMatchObject({ run_id: runId, id: expect.any(Number), event: expect.any(String) });
    }
    // Read back from disk by another server: every event, the input among them.
    const whole = await replay();
    expect(whole.map((part) => part.event)).toContain("values");
    expect(JSON.stringify(whole)).toContain(SECRET);
    expect(await replay("1")).toEqual(whole.slice(2));
  });

  it("leaves out a sealed event edited, moved to another id or renamed, and one planted in clear", async () => {
    const { dbName, runId, replay } = await encryptedRun("sealed-events-edited");
    const whole = await replay();
    const rows = (await agentRows(dbName)).run_events as { id: number; event: string; sealed: [string, Uint8Array] }[];
    const at = (id: number) => rows.find((row) => row.id === id)!;
    expect(rows.length).toBeGreaterThanOrEqual(6);
    // One byte of the ciphertext flipped.
    const flipped = at(1).sealed[1].slice();
    flipped[flipped.length - 1]! ^= 1;
    await editEvents(dbName, (store) => store.put({ ...at(1), sealed: [at(1).sealed[0], flipped] }));
    // In clear (an earlier build's row, or planted): the event as the run sent it.
    const clear = whole[2]!;
    await editEvents(dbName, (store) =>
      store.put({ run_id: runId, id: 2, event: clear.event, data: JSON.stringify(clear.data) }),
    );
    // Row 4's sealed data moved into row 3; row 5 renamed; a sealed value of another shape.
    await editEvents(dbName, (store) => store.put({ ...at(3), sealed: at(4).sealed }));
    await editEvents(dbName, (store) =>
      store.put({ ...at(5), event: at(5).event === "values" ? "updates" : "values" }),
    );
    await editEvents(dbName, (store) => store.put({ ...at(0), sealed: "text" }));
    expect(await replay()).toEqual([whole[4], ...whole.slice(6)]);
  });

  it("leaves out events sealed under a data key rekey retired, and the run's record stays", async () => {
    const { saver, client, threadId, runId, replay } = await encryptedRun("sealed-events-rekey");
    expect((await replay()).length).toBeGreaterThan(3);
    await saver.rekey();
    // No error and no hang: the replay ends with no stored event.
    expect((await replay()).map((part) => part.event)).toEqual(["end"]);
    expect((await client.runs.get(threadId, runId)).status).toBe("success");
  });
});

describe("run events beside a plain saver", () => {
  it("are stored as sent, in clear, as before", async () => {
    const { client, dbName } = await openServer("plain-events");
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "agent", { input: human(SECRET) });
    const [run] = await client.runs.list(thread.thread_id);
    const rows = (await agentRows(dbName)).run_events as Record<string, unknown>[];
    expect(rows.length).toBeGreaterThan(2);
    for (const [index, row] of rows.entries()) {
      // The row format of every earlier build: the event's fields, then its run, and nothing else.
      expect(Object.keys(row)).toEqual(["id", "event", "data", "run_id"]);
      expect(row).toMatchObject({ id: index, run_id: run.run_id });
      expect(() => JSON.parse(row.data as string)).not.toThrow();
    }
    expect(JSON.stringify(rows)).toContain(SECRET);
  });
});
