/**
 * Row binding version 3 (issue 11, item 2 and must-show 3): the hash chain
 * of parent links (src/saver/chain.ts). A walk up the parent chain decrypts
 * its target and proves each ancestor's clear parent link and versions by
 * hashing them with the parent's clear chain. The hash has no key, so these
 * attacks recompute chains as an attacker with the profile's files (and
 * this package's source) would; each must still fail closed. Node and
 * Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { chainOf } from "../../src/saver/chain.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import type { RowBoundSerializer } from "../../src/serde/protocol.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { putRaw, readStore } from "../support/reliability/raw.js";

/** The printable ASCII of `bytes` (a row reference's field names, as the additional data spells them). */
const clearText = (bytes: BufferSource): string =>
  String.fromCharCode(...new Uint8Array(ArrayBuffer.isView(bytes) ? bytes.buffer : bytes)).replace(/[^\x20-\x7e]/g, "");

const created: string[] = [];
const open: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const each of open.splice(0)) await each.close();
  for (const name of created.splice(0)) await deleteDatabase(name);
});

const KEY = new Uint8Array(32).map((_, i) => i * 5 + 3);
const THREAD = "chained";
const CHANNEL = "messages";
const IDS = ["1", "2", "3", "4", "5", "6"];

async function saverOn(name: string): Promise<IndexedDBSaver> {
  const saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
  open.push(saver);
  return saver;
}

/** Puts checkpoint 1 and its child 2 on a new database, the child started before the parent's put is done; the rows. */
async function parentAndChildAtOnce(prefix: string): Promise<Map<string, CheckpointRow>> {
  const name = freshDbName(prefix);
  created.push(name);
  const saver = await saverOn(name);
  const checkpoint = (id: string) => ({ ...emptyCheckpoint(), id, channel_versions: { [CHANNEL]: `v${id}` } });
  const metadata = { source: "loop", step: 1, parents: {} } as CheckpointMetadata;
  await Promise.all([
    saver.put(config(), checkpoint("1"), metadata, {}),
    saver.put(config("1"), checkpoint("2"), metadata, {}),
  ]);
  return readRows(name);
}

const config = (checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: THREAD, checkpoint_ns: "", ...(checkpointId && { checkpoint_id: checkpointId }) },
});

/** A delta thread 1 ← 2 ← … ← 6 (seed at 1, one `messages` write per checkpoint), on a new database. */
async function chainedThread(prefix: string): Promise<string> {
  const name = freshDbName(prefix);
  created.push(name);
  const saver = await saverOn(name);
  let at = config();
  for (const id of IDS) {
    const checkpoint = {
      ...emptyCheckpoint(),
      id,
      channel_values: id === "1" ? { [CHANNEL]: ["seed"] } : {},
      channel_versions: { [CHANNEL]: `v${id}` },
    };
    const metadata = { source: "loop", step: Number(id), parents: {} } as CheckpointMetadata;
    at = await saver.put(at, checkpoint, metadata, id === "1" ? { [CHANNEL]: `v${id}` } : {});
    await saver.putWrites(at, [[CHANNEL, `turn ${id}`]], `task-${id}`);
  }
  return name;
}

/** The thread's checkpoint rows, by id, after closing every saver. */
async function readRows(name: string): Promise<Map<string, CheckpointRow>> {
  for (const saver of open.splice(0)) await saver.close();
  const rows = await readStore<CheckpointRow>(name, "checkpoints");
  return new Map(rows.map((row) => [row.checkpoint_id, row]));
}

/** Puts `rows` back with raw IndexedDB. */
const writeRows = (name: string, rows: CheckpointRow[]) => putRaw(name, "checkpoints", rows);

/** Recomputes the chains of `ids` (oldest first) from their clear fields, as an attacker can. */
async function rechain(rows: Map<string, CheckpointRow>, ids: string[]): Promise<CheckpointRow[]> {
  const out: CheckpointRow[] = [];
  for (const id of ids) {
    const row = rows.get(id)!;
    const parent = row.parent_checkpoint_id === undefined ? undefined : rows.get(row.parent_checkpoint_id);
    row.chain = await chainOf(row, parent?.chain);
    out.push(row);
  }
  return out;
}

const walk = (saver: IndexedDBSaver, checkpointId = "6") =>
  saver.getDeltaChannelHistory({ config: config(checkpointId), channels: [CHANNEL] });

const turns = async (saver: IndexedDBSaver, checkpointId = "6") =>
  (await walk(saver, checkpointId))[CHANNEL]!.writes.map(([, , value]) => value);

describe("row binding version 3: the hash chain of parent links", () => {
  it("an encrypted saver chains every row it puts, and a fresh saver walks the thread right", async () => {
    const name = await chainedThread("chain-ok");
    const rows = await readRows(name);
    for (const row of rows.values()) expect(row.chain).toMatch(/^[0-9a-f]{64}$/);
    // Each chain is the hash of the row's clear fields and its parent's chain.
    for (const row of rows.values()) {
      const parent = row.parent_checkpoint_id === undefined ? undefined : rows.get(row.parent_checkpoint_id);
      expect(await chainOf(row, parent?.chain)).toBe(row.chain);
    }
    expect(await turns(await saverOn(name))).toEqual(["turn 1", "turn 2", "turn 3", "turn 4", "turn 5"]);
  });

  it("a plain saver writes no chain", async () => {
    const name = freshDbName("chain-plain");
    created.push(name);
    const saver = new IndexedDBSaver({ dbName: name });
    open.push(saver);
    await saver.put(config(), { ...emptyCheckpoint(), id: "1" }, { source: "input", step: -1, parents: {} }, {});
    expect((await readRows(name)).get("1")!.chain).toBeUndefined();
  });

  it("a child put that starts before its parent's put is done chains over the parent (the hash is asynchronous)", async () => {
    // Neither awaited before the other starts: the parent's chain is not hashed yet when the child asks for it.
    const rows = await parentAndChildAtOnce("chain-overlap");
    expect(rows.get("2")!.chain).toBe(await chainOf(rows.get("2")!, rows.get("1")!.chain));
  });

  it("a child put whose parent's encryption ends after its own still chains over the parent (it waits for that seal)", async () => {
    // The first metadata's encryption (the parent's, which starts first) ends 150 ms late: the child reaches
    // its seal first. Before, it read the parent from IndexedDB, found it not stored yet, and got no chain.
    const encrypt = crypto.subtle.encrypt.bind(crypto.subtle);
    let delayed = false;
    const slow = vi.spyOn(crypto.subtle, "encrypt").mockImplementation(async (...args) => {
      const aad = (args[0] as AesGcmParams).additionalData;
      const late = !delayed && aad !== undefined && /metadata/.test(clearText(aad));
      delayed ||= late;
      const sealed = await encrypt(...args);
      if (late) await new Promise((done) => setTimeout(done, 150));
      return sealed;
    });
    const rows = await parentAndChildAtOnce("chain-late-parent").finally(() => slow.mockRestore());
    expect(rows.get("2")!.chain).toMatch(/^[0-9a-f]{64}$/);
    expect(rows.get("2")!.chain).toBe(await chainOf(rows.get("2")!, rows.get("1")!.chain));
  });

  it("a row-bound serializer of the app's own, without WebCrypto: the put says why and stores nothing", async () => {
    const name = freshDbName("chain-no-webcrypto");
    created.push(name);
    const plain = new MsgpackSerializer();
    // Binds nothing, but is row-bound, so the saver chains its rows (and needs SHA-256 for that).
    const rowBound: RowBoundSerializer = {
      dumpsTyped: (value) => plain.dumpsTyped(value),
      loadsTyped: (type, data) => plain.loadsTyped(type, data),
      dumpsTypedForRow: (value) => plain.dumpsTyped(value),
      loadsTypedForRow: (type, data) => plain.loadsTyped(type, data),
    };
    const saver = new IndexedDBSaver({ dbName: name, serde: rowBound });
    open.push(saver);
    const metadata = { source: "input", step: -1, parents: {} } as CheckpointMetadata;
    const checkpoint = { ...emptyCheckpoint(), id: "1" };
    // What a page served over plain http from a LAN address has: getRandomValues, no crypto.subtle.
    vi.stubGlobal("crypto", { getRandomValues: crypto.getRandomValues.bind(crypto) });
    try {
      await expect(saver.put(config(), checkpoint, metadata, {})).rejects.toThrow(
        /WebCrypto \(crypto\.subtle\) is not available.*secure contexts/,
      );
    } finally {
      vi.unstubAllGlobals();
    }
    expect((await readRows(name)).size).toBe(0);
  });

  it("an ancestor relinked past a turn, its chain recomputed: the walk fails closed", async () => {
    const name = await chainedThread("chain-relink");
    const rows = await readRows(name);
    rows.get("4")!.parent_checkpoint_id = "2"; // turn 3 would vanish from the history
    await writeRows(name, await rechain(rows, ["4"]));
    const error = await walk(await saverOn(name)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecryptionError);
    expect((error as Error).message).toMatch(/Checkpoint 5 of thread "chained"/);
  });

  it("an ancestor's versions edited and every chain up to the target recomputed: the target's seal refuses", async () => {
    const name = await chainedThread("chain-versions");
    const rows = await readRows(name);
    rows.get("3")!.channel_versions = { [CHANNEL]: "v1" }; // would seed the walk at 3 with 1's value
    await writeRows(name, await rechain(rows, ["3", "4", "5", "6"]));
    const saver = await saverOn(name);
    await expect(walk(saver)).rejects.toBeInstanceOf(DecryptionError);
    await expect(saver.getTuple(config("6"))).rejects.toBeInstanceOf(DecryptionError);
  });

  it("a chain removed (to read the row as version 2) or added: the row no longer opens", async () => {
    const name = await chainedThread("chain-strip");
    const rows = await readRows(name);
    const stripped = { ...rows.get("3")! };
    delete stripped.chain;
    await writeRows(name, [stripped]);
    const saver = await saverOn(name);
    await expect(saver.getTuple(config("3"))).rejects.toBeInstanceOf(DecryptionError);
    await expect(walk(saver)).rejects.toBeInstanceOf(DecryptionError);
    await writeRows(name, [{ ...rows.get("3")!, chain: rows.get("2")!.chain! }]);
    await expect((await saverOn(name)).getTuple(config("3"))).rejects.toBeInstanceOf(DecryptionError);
  });

  it("a put on a parent whose chain was altered fails closed and writes nothing", async () => {
    const name = await chainedThread("chain-put");
    const rows = await readRows(name);
    await writeRows(name, [{ ...rows.get("6")!, chain: "0".repeat(64) }]);
    const saver = await saverOn(name);
    const next = { ...emptyCheckpoint(), id: "7", channel_versions: { [CHANNEL]: "v7" } };
    const put = saver.put(config("6"), next, { source: "loop", step: 7, parents: {} } as CheckpointMetadata, {});
    await expect(put).rejects.toBeInstanceOf(DecryptionError);
    expect((await readRows(name)).has("7")).toBe(false);
  });

  it("walks proven once stay right after the rows are put back as they were", async () => {
    const name = await chainedThread("chain-restore");
    const rows = await readRows(name);
    const original = structuredClone(rows.get("4")!);
    rows.get("4")!.parent_checkpoint_id = "2";
    await writeRows(name, await rechain(rows, ["4"]));
    await expect(walk(await saverOn(name))).rejects.toBeInstanceOf(DecryptionError);
    await readRows(name);
    await writeRows(name, [original]);
    expect(await turns(await saverOn(name))).toEqual(["turn 1", "turn 2", "turn 3", "turn 4", "turn 5"]);
  });
});
