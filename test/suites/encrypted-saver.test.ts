/**
 * EncryptedSerializer behind IndexedDBSaver (and IndexedDBStore), checked
 * against the raw object stores: what an attacker holding the database files
 * sees and can change. Each test fills a database through the saver, closes
 * it, opens it raw with `indexedDB.open` to scan or tamper with rows, then
 * reopens it with a new saver. Runs on fake-indexeddb in Node and on the
 * real IndexedDB in Chromium.
 *
 * Key changes go through `saver.changeKey(next)` / `saver.rekey()`.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { emptyCheckpoint, uuid6, type CheckpointMetadata, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph/web";
import { afterEach, describe, expect, it } from "vitest";
import { sameClone } from "../../src/core/equality.js";
import { EncryptedSerializer, inspectEnvelope, type AesGcmKeyRecord } from "../../src/serde/encrypted/index.js";
import { DecryptionError } from "../../src/core/errors.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointRow, ThreadRow, TypedBytes } from "../../src/rows/shapes.js";
import { IndexedDBStore } from "../../src/store/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { containsText } from "../support/plaintext.js";
import { request, withRaw } from "../support/raw-idb.js";

const MARKER = "MARKER-c0ffee-do-not-store-in-clear";
const SALT = "encrypted-saver.test";
/** Fast PBKDF2 for tests (serde/encrypted/encrypted.test.ts runs the 600,000 default). */
const ITERATIONS = 1_000;

const serdeFor = (passphrase: string, options: { allowPlaintext?: boolean } = {}) =>
  EncryptedSerializer.fromPassphrase(passphrase, {
    salt: SALT,
    iterations: ITERATIONS,
    insecureTestOnlyWeakKdf: true,
    ...options,
  });

const created: string[] = [];
afterEach(async () => {
  for (const name of created.splice(0)) await deleteDatabase(name);
});

function newDbName(): string {
  const name = freshDbName("encrypted-saver");
  created.push(name);
  return name;
}

// ------------------------------------------------------------------ raw IndexedDB

/** Every row of every object store. */
async function dump(name: string): Promise<Record<string, unknown[]>> {
  return withRaw(name, async (db) => {
    const out: Record<string, unknown[]> = {};
    for (const store of Array.from(db.objectStoreNames)) {
      out[store] = await request(db.transaction(store).objectStore(store).getAll());
    }
    return out;
  });
}

async function putRows(name: string, store: string, rows: unknown[]): Promise<void> {
  await withRaw(name, async (db) => {
    const tx = db.transaction(store, "readwrite");
    for (const row of rows) tx.objectStore(store).put(row);
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
  });
}

function isTyped(value: unknown): value is TypedBytes {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && value[1] instanceof Uint8Array;
}

/** A stored serialized value: where it is, and which checkpoints need it to read. */
interface Slot {
  store: "checkpoints" | "blobs" | "writes";
  row: Record<string, unknown>;
  field: "checkpoint" | "metadata" | "value";
  label: string;
}

/** Every serialized value in the saver's stores (threads' copy of the latest metadata aside). */
function slots(rows: Record<string, unknown[]>): Slot[] {
  const out: Slot[] = [];
  for (const store of ["checkpoints", "blobs", "writes"] as const) {
    for (const row of rows[store] as Record<string, unknown>[]) {
      // The saver's own rows (tombstone and key-id copies) hold no value.
      if (String(row.checkpoint_ns).startsWith("\u0000")) continue;
      for (const field of ["checkpoint", "metadata", "value"] as const) {
        if (isTyped(row[field])) {
          const label = `${store}.${field} ${JSON.stringify([row.thread_id, row.checkpoint_ns, row.checkpoint_id ?? row.channel, row.task_id ?? row.version, row.idx ?? ""])}`;
          out.push({ store, row, field, label });
        }
      }
    }
  }
  return out;
}

// ------------------------------------------------------------------ fixtures

interface Fixture {
  /** Every checkpoint put, by id. */
  configs: Map<
    string,
    RunnableConfig & { configurable: { thread_id: string; checkpoint_ns: string; checkpoint_id: string } }
  >;
}

async function putCheckpoint(
  saver: IndexedDBSaver,
  fixture: Fixture,
  threadId: string,
  checkpointNs: string,
  parent: { id: string; versions: Record<string, number> } | undefined,
  changed: Record<string, unknown>,
  metadata: Record<string, unknown>,
): Promise<{ id: string; versions: Record<string, number> }> {
  const checkpoint = emptyCheckpoint();
  checkpoint.id = uuid6(-1);
  const newVersions = Object.fromEntries(
    Object.keys(changed).map((channel) => [channel, saver.getNextVersion(undefined)]),
  );
  const versions = { ...parent?.versions, ...newVersions };
  checkpoint.channel_versions = versions;
  checkpoint.channel_values = { ...changed };
  const config = { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: parent?.id } };
  await saver.put(
    config,
    checkpoint,
    { source: "loop", step: 0, parents: {}, ...metadata } as CheckpointMetadata,
    newVersions,
  );
  fixture.configs.set(checkpoint.id, {
    configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id },
  });
  return { id: checkpoint.id, versions };
}

/**
 * Two threads, a child namespace, shared and unshared channel versions,
 * regular and special pending writes; the marker in channel values,
 * metadata and writes (never in ids, which are stored in the clear).
 */
async function populate(saver: IndexedDBSaver, threads = ["thread-a", "thread-b"]): Promise<Fixture> {
  const fixture: Fixture = { configs: new Map() };
  for (const thread of threads) {
    const first = await putCheckpoint(
      saver,
      fixture,
      thread,
      "",
      undefined,
      // `note` is too large to sit inline in its row (row format 2): a blob row, as the swaps below need.
      { messages: [new HumanMessage(`${MARKER} question`)], note: `${MARKER} note`.padEnd(4096, "."), count: 1 },
      { source: "input", step: -1, memo: `${MARKER} metadata` },
    );
    await saver.putWrites(
      fixture.configs.get(first.id)!,
      [
        ["messages", [new AIMessage(`${MARKER} pending answer`)]],
        ["count", 2],
      ],
      "task-1",
    );
    const second = await putCheckpoint(
      saver,
      fixture,
      thread,
      "",
      first,
      { messages: [new AIMessage(`${MARKER} answer`)], count: 2 },
      {
        memo: `${MARKER} second`,
      },
    );
    await saver.putWrites(fixture.configs.get(second.id)!, [["__error__", { message: `${MARKER} boom` }]], "task-2");
    await putCheckpoint(saver, fixture, thread, "child", undefined, { inner: `${MARKER} subgraph` }, { memo: "child" });
  }
  return fixture;
}

/** Every checkpoint of the fixture, read through `saver`, by id. */
async function readAll(saver: IndexedDBSaver, fixture: Fixture): Promise<Map<string, CheckpointTuple | undefined>> {
  const out = new Map<string, CheckpointTuple | undefined>();
  for (const [id, config] of fixture.configs) out.set(id, await saver.getTuple(config));
  return out;
}

/** Like `readAll`, each result "ok" or the error's class name. */
async function outcomes(saver: IndexedDBSaver, fixture: Fixture): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [id, config] of fixture.configs) {
    out.set(
      id,
      await saver.getTuple(config).then(
        (tuple) => (tuple ? "ok" : "missing"),
        (error: unknown) => (error as Error).constructor.name,
      ),
    );
  }
  return out;
}

/** The checkpoint ids whose getTuple reads the value in `slot`. */
function readersOf(slot: Slot, rows: Record<string, unknown[]>): Set<string> {
  const row = slot.row;
  if (slot.store === "checkpoints" || slot.store === "writes") return new Set([row.checkpoint_id as string]);
  const readers = new Set<string>();
  for (const checkpoint of rows.checkpoints as CheckpointRow[]) {
    if (
      checkpoint.thread_id === row.thread_id &&
      checkpoint.checkpoint_ns === row.checkpoint_ns &&
      checkpoint.channel_versions[row.channel as string] === row.version
    ) {
      readers.add(checkpoint.checkpoint_id);
    }
  }
  return readers;
}

// ------------------------------------------------------------------ key changes

/** Changes the saver's key (rewrapping only), then closes it. */
async function changeKey(saver: IndexedDBSaver, next: EncryptedSerializer): Promise<void> {
  await saver.changeKey(next, { rewrapOnly: true });
  await saver.close();
}

/** Re-encrypts every row of the saver under a fresh data key, then closes it. */
async function rekey(saver: IndexedDBSaver): Promise<void> {
  await saver.rekey();
  await saver.close();
}

async function keyRecord(name: string): Promise<AesGcmKeyRecord> {
  const meta = (await dump(name)).meta as { name: string; value: unknown }[];
  return meta.find((row) => row.name === "key")!.value as AesGcmKeyRecord;
}

// ------------------------------------------------------------------ tests

describe("IndexedDBSaver + EncryptedSerializer: nothing in the clear (must-show 1)", () => {
  it("stores no plaintext in any object store; the same scan finds it without encryption", async () => {
    const encryptedDb = newDbName();
    const encrypted = new IndexedDBSaver({ dbName: encryptedDb, serde: await serdeFor("pass") });
    const fixture = await populate(encrypted);
    expect((await readAll(encrypted, fixture)).size).toBe(6);
    await encrypted.close();
    const rows = await dump(encryptedDb);
    expect(Object.keys(rows).sort()).toEqual(["blobs", "checkpoints", "meta", "threads", "writes"]);
    for (const [store, content] of Object.entries(rows)) {
      expect(content.length, store).toBeGreaterThan(0);
      expect(containsText(content, MARKER), `marker found in ${store}`).toBe(false);
    }
    const values = slots(rows);
    expect(values.length).toBeGreaterThanOrEqual(6 * 2 + 8);
    for (const slot of values) expect((slot.row[slot.field] as TypedBytes)[0], slot.label).toBe("msgpack+aes-gcm");

    const plainDb = newDbName();
    const plain = new IndexedDBSaver({ dbName: plainDb });
    await populate(plain);
    await plain.close();
    const plainRows = await dump(plainDb);
    for (const store of ["checkpoints", "blobs", "writes", "threads"]) {
      expect(containsText(plainRows[store], MARKER), `marker expected in plaintext ${store}`).toBe(true);
    }
  });

  it("a graph run on IndexedDBSaver stores nothing in the clear and reads back after a reopen", async () => {
    const dbName = newDbName();
    const graph = (checkpointer: IndexedDBSaver) =>
      new StateGraph(MessagesAnnotation)
        .addNode("agent", (state) => ({ messages: [new AIMessage(`${MARKER} reply ${state.messages.length}`)] }))
        .addEdge(START, "agent")
        .addEdge("agent", END)
        .compile({ checkpointer });
    const config = { configurable: { thread_id: "graph-thread" } };
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    await graph(saver).invoke({ messages: [new HumanMessage(`${MARKER} hi`)] }, config);
    await graph(saver).invoke({ messages: [new HumanMessage(`${MARKER} again`)] }, config);
    await saver.close();
    expect(containsText(await dump(dbName), MARKER)).toBe(false);
    const reopened = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const state = await graph(reopened).getState(config);
    expect(state.values.messages.map((m: { content: unknown }) => m.content)).toEqual([
      `${MARKER} hi`,
      `${MARKER} reply 1`,
      `${MARKER} again`,
      `${MARKER} reply 3`,
    ]);
    await reopened.close();
  });

  it("IndexedDBStore: stores no item value in the clear; the same scan finds it without encryption", async () => {
    const encryptedDb = newDbName();
    const store = new IndexedDBStore({ dbName: encryptedDb, serde: await serdeFor("pass") });
    await store.put(["user-1", "memories"], "m1", { text: `${MARKER} likes tea`, nested: { list: [MARKER] } });
    await store.put(["user-1", "memories"], "m2", { text: "other" });
    expect((await store.get(["user-1", "memories"], "m1"))?.value).toEqual({
      text: `${MARKER} likes tea`,
      nested: { list: [MARKER] },
    });
    await store.close();
    const rows = await dump(encryptedDb);
    expect(rows.items).toHaveLength(2);
    for (const [name, content] of Object.entries(rows))
      expect(containsText(content, MARKER), `marker found in ${name}`).toBe(false);
    const reopened = new IndexedDBStore({ dbName: encryptedDb, serde: await serdeFor("pass") });
    expect((await reopened.get(["user-1", "memories"], "m1"))?.value.text).toBe(`${MARKER} likes tea`);
    await reopened.close();
    const wrong = new IndexedDBStore({ dbName: encryptedDb, serde: await serdeFor("wrong") });
    await expect(wrong.get(["user-1", "memories"], "m1")).rejects.toThrow(/Wrong passphrase or key/);
    await expect(wrong.get(["user-1", "memories"], "m1")).rejects.toBeInstanceOf(DecryptionError);
    await wrong.close();

    const plainDb = newDbName();
    const plain = new IndexedDBStore({ dbName: plainDb });
    await plain.put(["user-1", "memories"], "m1", { text: `${MARKER} likes tea` });
    await plain.close();
    expect(containsText((await dump(plainDb)).items, MARKER)).toBe(true);
  });
});

describe("IndexedDBSaver + EncryptedSerializer: tampering fails closed (must-show 2)", () => {
  it("a flipped bit in any stored ciphertext fails exactly the reads that need it", async () => {
    const dbName = newDbName();
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const fixture = await populate(saver);
    await saver.close();
    const rows = await dump(dbName);
    const all = slots(rows);
    expect(all.length).toBeGreaterThan(0);
    for (const [i, slot] of all.entries()) {
      const [type, data] = slot.row[slot.field] as TypedBytes;
      const flipped = data.slice();
      const bit = (i * 2_654_435_761) % (data.length * 8);
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      await putRows(dbName, slot.store, [{ ...slot.row, [slot.field]: [type, flipped] }]);

      const readers = readersOf(slot, rows);
      expect(readers.size, slot.label).toBeGreaterThan(0);
      const reader = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
      const expected = new Map(
        [...fixture.configs.keys()].map((id) => [id, readers.has(id) ? "DecryptionError" : "ok"]),
      );
      expect(await outcomes(reader, fixture), `bit ${bit} of ${slot.label}`).toEqual(expected);
      await reader.close();
      await putRows(dbName, slot.store, [slot.row]);
    }
    const reader = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    expect(new Set((await outcomes(reader, fixture)).values())).toEqual(new Set(["ok"]));
    await reader.close();
  });

  it("a wrong passphrase fails at open with a clear error, before reading or writing anything", async () => {
    const dbName = newDbName();
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("right") });
    const fixture = await populate(saver);
    await saver.close();
    const before = await dump(dbName);

    const wrong = new IndexedDBSaver({ dbName, serde: await serdeFor("wrong") });
    const listing = wrong.list({ configurable: { thread_id: "thread-a" } }).next();
    const error = await listing.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DecryptionError);
    expect((error as Error).message).toMatch(/Wrong passphrase or key/);
    await expect(wrong.getTuple(fixture.configs.values().next().value!)).rejects.toBeInstanceOf(DecryptionError);
    const checkpoint = emptyCheckpoint();
    checkpoint.id = uuid6(-1);
    await expect(
      wrong.put(
        { configurable: { thread_id: "thread-new", checkpoint_ns: "" } },
        checkpoint,
        { source: "input", step: -1, parents: {} },
        {},
      ),
    ).rejects.toBeInstanceOf(DecryptionError);
    await expect(
      wrong.putWrites(
        { configurable: { thread_id: "thread-a", checkpoint_ns: "", checkpoint_id: checkpoint.id } },
        [["x", 1]],
        "task",
      ),
    ).rejects.toBeInstanceOf(DecryptionError);
    await wrong.close();
    expect(sameClone(await dump(dbName), before)).toBe(true);

    const right = new IndexedDBSaver({ dbName, serde: await serdeFor("right") });
    expect(new Set((await outcomes(right, fixture)).values())).toEqual(new Set(["ok"]));
    await right.close();
  });

  it("a value copied into another row fails to decrypt; the other rows still read", async () => {
    const dbName = newDbName();
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const fixture = await populate(saver);
    await saver.close();
    const rows = await dump(dbName);
    const checkpoints = rows.checkpoints as CheckpointRow[];
    const find = (thread: string, ns: string, index: number) =>
      checkpoints
        .filter((r) => r.thread_id === thread && r.checkpoint_ns === ns)
        .sort((a, b) => (a.checkpoint_id < b.checkpoint_id ? -1 : 1))[index]!;
    const [a1, a2, b1] = [find("thread-a", "", 0), find("thread-a", "", 1), find("thread-b", "", 0)];
    const blobs = rows.blobs as Record<string, unknown>[];
    const noteOf = (thread: string) => blobs.find((b) => b.thread_id === thread && b.channel === "note")!;
    const writes = rows.writes as Record<string, unknown>[];
    const writesOf = (checkpointId: string) =>
      writes.filter((w) => w.checkpoint_id === checkpointId).sort((x, y) => (x.idx as number) - (y.idx as number));

    const swaps: {
      label: string;
      store: string;
      tampered: Record<string, unknown>;
      original: Record<string, unknown>;
      broken: string[];
    }[] = [
      // checkpoint A's value copied into checkpoint B's row (same thread)
      {
        label: "checkpoint a1 -> a2",
        store: "checkpoints",
        tampered: { ...a2, checkpoint: a1.checkpoint },
        original: { ...a2 },
        broken: [a2.checkpoint_id],
      },
      // across threads
      {
        label: "checkpoint a1 -> b1",
        store: "checkpoints",
        tampered: { ...b1, checkpoint: a1.checkpoint },
        original: { ...b1 },
        broken: [b1.checkpoint_id],
      },
      {
        label: "metadata a1 -> b1",
        store: "checkpoints",
        tampered: { ...b1, metadata: a1.metadata },
        original: { ...b1 },
        broken: [b1.checkpoint_id],
      },
      {
        label: "checkpoint <-> metadata of a1",
        store: "checkpoints",
        tampered: { ...a1, checkpoint: a1.metadata, metadata: a1.checkpoint },
        original: { ...a1 },
        broken: [a1.checkpoint_id],
      },
      {
        label: "blob note a -> b",
        store: "blobs",
        tampered: { ...noteOf("thread-b"), value: noteOf("thread-a").value },
        original: { ...noteOf("thread-b") },
        broken: [b1.checkpoint_id, find("thread-b", "", 1).checkpoint_id],
      },
      {
        label: "write idx 0 <-> 1",
        store: "writes",
        tampered: { ...writesOf(a1.checkpoint_id)[1]!, value: writesOf(a1.checkpoint_id)[0]!.value },
        original: { ...writesOf(a1.checkpoint_id)[1]! },
        broken: [a1.checkpoint_id],
      },
    ];
    for (const swap of swaps) {
      await putRows(dbName, swap.store, [swap.tampered]);
      const reader = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
      const expected = new Map(
        [...fixture.configs.keys()].map((id) => [id, swap.broken.includes(id) ? "DecryptionError" : "ok"]),
      );
      expect(await outcomes(reader, fixture), swap.label).toEqual(expected);
      await reader.close();
      await putRows(dbName, swap.store, [swap.original]);
    }

    // A whole checkpoint (row, blobs, writes) copied into another thread does not read there.
    await putRows(dbName, "checkpoints", [{ ...a1, thread_id: "thread-c" }]);
    await putRows(
      dbName,
      "blobs",
      blobs.filter((b) => b.thread_id === "thread-a").map((b) => ({ ...b, thread_id: "thread-c" })),
    );
    const reader = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    await expect(
      reader.getTuple({ configurable: { thread_id: "thread-c", checkpoint_ns: "" } }),
    ).rejects.toBeInstanceOf(DecryptionError);
    expect(new Set((await outcomes(reader, fixture)).values())).toEqual(new Set(["ok"]));
    await reader.close();
  });

  it("a plaintext row is a DecryptionError without allowPlaintext, and reads with it", async () => {
    const dbName = newDbName();
    // Rows written before encryption was turned on.
    const plain = new IndexedDBSaver({ dbName, serde: new MsgpackSerializer() });
    const legacy = await populate(plain, ["thread-plain"]);
    const legacyTuples = await readAll(plain, legacy);
    await plain.close();
    // Without allowPlaintext, a populated database with no key record is refused (issue 11, item 7)...
    const unmigrated = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    await expect(unmigrated.getTuple(legacy.configs.values().next().value!)).rejects.toThrow(
      /no encryption key record/,
    );
    await unmigrated.close();
    // ...turning encryption on over plaintext rows is a migration.
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass", { allowPlaintext: true }) });
    const fixture = await populate(saver);
    await saver.close();
    // Once encrypted, the database refuses a saver opened without the key.
    const keyless = new IndexedDBSaver({ dbName, serde: new MsgpackSerializer() });
    await expect(keyless.getTuple(legacy.configs.values().next().value!)).rejects.toThrow(/This database is encrypted/);
    await expect(
      keyless.put(
        { configurable: { thread_id: "sneaky", checkpoint_ns: "" } },
        emptyCheckpoint(),
        { source: "loop", step: 0, parents: {} },
        {},
      ),
    ).rejects.toThrow(/This database is encrypted/);
    await keyless.close();

    const strict = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const refused = await outcomes(strict, legacy);
    expect(new Set(refused.values())).toEqual(new Set(["DecryptionError"]));
    await expect(strict.getTuple(legacy.configs.values().next().value!)).rejects.toThrow(/allowPlaintext/);
    expect(new Set((await outcomes(strict, fixture)).values())).toEqual(new Set(["ok"]));
    await strict.close();

    const migrating = new IndexedDBSaver({ dbName, serde: await serdeFor("pass", { allowPlaintext: true }) });
    expect(await readAll(migrating, legacy)).toEqual(legacyTuples);
    expect(new Set((await outcomes(migrating, fixture)).values())).toEqual(new Set(["ok"]));
    await migrating.close();
  });
});

describe("IndexedDBSaver + EncryptedSerializer: reopening and key rotation (must-show 4)", () => {
  it("reopens with the right passphrase (a new serializer, same salt) and reads everything", async () => {
    const dbName = newDbName();
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const fixture = await populate(saver);
    const before = await readAll(saver, fixture);
    const listed = [];
    for await (const tuple of saver.list({})) listed.push(tuple);
    await saver.close();

    const reopened = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    expect(await readAll(reopened, fixture)).toEqual(before);
    const relisted = [];
    for await (const tuple of reopened.list({})) relisted.push(tuple);
    expect(relisted).toEqual(listed);
    expect(relisted).toHaveLength(6);
    const tuple = before.values().next().value!;
    expect(tuple.checkpoint.channel_values.note).toBe(`${MARKER} note`.padEnd(4096, "."));
    expect(tuple.metadata).toMatchObject({ memo: `${MARKER} metadata` });
    expect(tuple.pendingWrites?.map(([, channel]) => channel)).toEqual(["messages", "count"]);
    await reopened.close();
  });

  it("changeKey with rewrapOnly re-wraps the data key: everything reads under the new one, nothing under the old, no row re-encrypted", async () => {
    const dbName = newDbName();
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("old passphrase") });
    const fixture = await populate(saver);
    const before = await readAll(saver, fixture);
    const rowsBefore = await dump(dbName);
    const recordBefore = await keyRecord(dbName);

    await changeKey(saver, await serdeFor("new passphrase"));
    const rowsAfter = await dump(dbName);
    for (const store of ["checkpoints", "blobs", "writes", "threads"]) {
      expect(sameClone(rowsAfter[store], rowsBefore[store]), `${store} unchanged`).toBe(true);
    }
    const recordAfter = await keyRecord(dbName);
    expect(recordAfter.keys.map((k) => k.id)).toEqual(recordBefore.keys.map((k) => k.id));
    expect(recordAfter.kek).toBe(await (await serdeFor("new passphrase")).keyId());

    const next = new IndexedDBSaver({ dbName, serde: await serdeFor("new passphrase") });
    expect(await readAll(next, fixture)).toEqual(before);
    await next.close();
    const old = new IndexedDBSaver({ dbName, serde: await serdeFor("old passphrase") });
    await expect(old.getTuple(fixture.configs.values().next().value!)).rejects.toThrow(/Wrong passphrase or key/);
    await old.close();
  });

  it("rekeying re-encrypts every row under a fresh data key and finishes a plaintext migration", async () => {
    const dbName = newDbName();
    // Data from before encryption was turned on...
    const plain = new IndexedDBSaver({ dbName, serde: new MsgpackSerializer() });
    const legacy = await populate(plain, ["thread-legacy"]);
    await plain.close();
    // ...then encryption turned on, with plaintext still readable while migrating.
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass", { allowPlaintext: true }) });
    const fixture = await populate(saver);
    const before = new Map([...(await readAll(saver, legacy)), ...(await readAll(saver, fixture))]);
    const oldKey = (await keyRecord(dbName)).keys[0]!.id;

    await rekey(saver);
    const record = await keyRecord(dbName);
    expect(record.keys).toHaveLength(1);
    expect(record.keys[0]!.id).not.toBe(oldKey);
    const rows = await dump(dbName);
    expect(containsText(rows, MARKER)).toBe(false);
    const values = slots(rows);
    for (const slot of values) {
      expect(inspectEnvelope((slot.row[slot.field] as TypedBytes)[1])?.keyId, slot.label).toBe(record.keys[0]!.id);
    }
    for (const thread of rows.threads as ThreadRow[]) {
      if (thread.latest) expect(inspectEnvelope(thread.latest.metadata[1])?.keyId).toBe(record.keys[0]!.id);
    }

    // Everything reads without allowPlaintext now.
    const strict = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const after = new Map([...(await readAll(strict, legacy)), ...(await readAll(strict, fixture))]);
    expect(after).toEqual(before);
    await strict.close();
  });

  it("rekey while the same saver keeps writing leaves every row under the new key", async () => {
    const dbName = newDbName();
    const saver = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    const fixture = await populate(saver);
    const [, live] = await Promise.all([saver.rekey(), populate(saver, ["thread-live-1", "thread-live-2"])]);
    const before = new Map([...(await readAll(saver, fixture)), ...(await readAll(saver, live))]);
    await saver.close();
    const record = await keyRecord(dbName);
    expect(record.keys).toHaveLength(1);
    for (const slot of slots(await dump(dbName))) {
      expect(inspectEnvelope((slot.row[slot.field] as TypedBytes)[1])?.keyId, slot.label).toBe(record.keys[0]!.id);
    }
    const reopened = new IndexedDBSaver({ dbName, serde: await serdeFor("pass") });
    expect(new Map([...(await readAll(reopened, fixture)), ...(await readAll(reopened, live))])).toEqual(before);
    await reopened.close();
  });
});

describe("IndexedDBStore + EncryptedSerializer: key rotation (must-show 4)", () => {
  it("changeKey and rekey keep every item readable under the new passphrase only", async () => {
    const dbName = newDbName();
    const store = new IndexedDBStore({ dbName, serde: await serdeFor("old") });
    await store.put(["user-1"], "a", { text: `${MARKER} a` });
    await store.put(["user-1", "notes"], "b", { text: `${MARKER} b` });
    await store.changeKey(await serdeFor("new"));
    await store.put(["user-1"], "c", { text: `${MARKER} c` });
    await store.rekey();
    await store.close();
    expect(containsText(await dump(dbName), MARKER)).toBe(false);
    const old = new IndexedDBStore({ dbName, serde: await serdeFor("old") });
    await expect(old.get(["user-1"], "a")).rejects.toBeInstanceOf(DecryptionError);
    await old.close();
    const reopened = new IndexedDBStore({ dbName, serde: await serdeFor("new") });
    const items = await reopened.search(["user-1"]);
    expect(items.map((item) => item.value.text).sort()).toEqual([`${MARKER} a`, `${MARKER} b`, `${MARKER} c`]);
    await reopened.close();
  });
});
