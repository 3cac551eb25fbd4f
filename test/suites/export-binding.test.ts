/**
 * Attacks on exported thread files of an encrypted saver (issue 11, item 6):
 * the default export must not hold the thread in plaintext, and the records
 * of an encrypted file (format version 2) are bound to the file and their
 * place, so reordering, dropping or splicing records (with the checksum and
 * counts fixed up, as an attacker would) fails the import with nothing
 * written. Also: an import can refuse `"json"` files. Node and Chromium.
 */
import {
  emptyCheckpoint,
  JsonPlusSerializer,
  MemorySaver,
  type CheckpointMetadata,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it } from "vitest";
import { crc32 } from "../../src/core/crc32.js";
import { DecryptionError } from "../../src/core/errors.js";
import { ThreadFileError } from "../../src/portable/errors.js";
import { exportThread, importThread, readThreadExportHeader } from "../../src/portable/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";

const created: string[] = [];
const open: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const saver of open.splice(0)) await saver.close();
  for (const name of created.splice(0)) await deleteDatabase(name);
});

const KEY = new Uint8Array(32).map((_, i) => 255 - i);
const SECRET = "the launch code is 0000";
const THREAD = "exported";

/** An encrypted saver holding a three-checkpoint thread whose state and writes carry SECRET. */
async function encryptedThread(taskPath?: string): Promise<IndexedDBSaver> {
  const name = freshDbName("export-binding");
  created.push(name);
  const saver = new IndexedDBSaver({ dbName: name, serde: await EncryptedSerializer.fromRawKey(KEY) });
  open.push(saver);
  let config: RunnableConfig = { configurable: { thread_id: THREAD, checkpoint_ns: "" } };
  for (const step of [1, 2, 3]) {
    const versions = { notes: `${step}.n` };
    const checkpoint = {
      ...emptyCheckpoint(),
      id: `0${step}`,
      channel_values: { notes: `${SECRET} #${step}` },
      channel_versions: versions,
    };
    const metadata = { source: "loop", step, parents: {} } as CheckpointMetadata;
    config = await saver.put(config, checkpoint, metadata, versions);
    await saver.putWrites(config, [["notes", `${SECRET} (write ${step})`]], `task-${step}`, taskPath);
  }
  return saver;
}

const contains = (file: Uint8Array, text: string) => new TextDecoder("latin1").decode(file).includes(text);

/** The frames of a file: kind and payload. */
function framesOf(file: Uint8Array): { kind: number; payload: Uint8Array }[] {
  const frames: { kind: number; payload: Uint8Array }[] = [];
  for (let at = 8; at < file.length;) {
    const length = new DataView(file.buffer, file.byteOffset + at + 1, 4).getUint32(0);
    frames.push({ kind: file[at]!, payload: file.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return frames;
}

/** A file rebuilt from frames, with the header's and trailer's counts and the checksum fixed up. */
function rebuilt(original: Uint8Array, frames: { kind: number; payload: Uint8Array }[]): Uint8Array {
  const middle = frames.slice(1, -1);
  const header = JSON.parse(new TextDecoder().decode(frames[0]!.payload)) as { counts: Record<string, number> };
  const checkpoints = middle.filter((f) => f.kind === 0x43).length;
  const blobs = middle.filter((f) => f.kind === 0x42).length;
  const trailer = JSON.parse(new TextDecoder().decode(frames.at(-1)!.payload)) as Record<string, unknown>;
  const writes = checkpoints === header.counts.checkpoints ? header.counts.writes! : (trailer.writes as number) - 1;
  header.counts = { checkpoints, blobs, writes };
  const encodeFrame = (kind: number, payload: Uint8Array) => {
    const out = new Uint8Array(5 + payload.length);
    out[0] = kind;
    new DataView(out.buffer).setUint32(1, payload.length);
    out.set(payload, 5);
    return out;
  };
  const parts = [
    original.subarray(0, 8),
    encodeFrame(0x48, new TextEncoder().encode(JSON.stringify(header))),
    ...middle.map((f) => encodeFrame(f.kind, f.payload)),
  ];
  const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.length;
  }
  const crc = (crc32(0, body) >>> 0).toString(16).padStart(8, "0");
  const end = encodeFrame(0x45, new TextEncoder().encode(JSON.stringify({ checkpoints, blobs, writes, crc32: crc })));
  const file = new Uint8Array(body.length + end.length);
  file.set(body);
  file.set(end, body.length);
  return file;
}

/** Imports `file` into a fresh MemorySaver: the rejection, and whether anything was written. */
async function importRejected(
  file: Uint8Array,
  serde?: EncryptedSerializer,
): Promise<{ error: unknown; wrote: boolean }> {
  const target = new MemorySaver();
  const error = await importThread(target, file, { serde }).then(
    () => undefined,
    (e: unknown) => e,
  );
  const wrote = (await target.getTuple({ configurable: { thread_id: THREAD } })) !== undefined;
  return { error, wrote };
}

describe("exportThread of an encrypted saver (issue 11, item 6)", () => {
  it("is encrypted by default (format version 2), and imports with the saver's serializer", async () => {
    const saver = await encryptedThread();
    const file = await saver.exportThread(THREAD, { as: "bytes" });
    expect(contains(file, SECRET)).toBe(false);
    const header = await readThreadExportHeader(file);
    expect(header).toMatchObject({ version: 2, serde: "msgpack+aes-gcm", threadId: THREAD });
    expect(header.exportId).toMatch(/^[0-9a-f]{32}$/);
    const target = new MemorySaver();
    await importThread(target, file, { serde: await EncryptedSerializer.fromRawKey(KEY) });
    const tuple = await target.getTuple({ configurable: { thread_id: THREAD } });
    expect(tuple?.checkpoint.channel_values.notes).toBe(`${SECRET} #3`);
    expect(tuple?.pendingWrites).toEqual([["task-3", "notes", `${SECRET} (write 3)`]]);
  });

  it("writes plaintext only when told so explicitly (unencrypted: true), as format version 1", async () => {
    const saver = await encryptedThread();
    const file = await saver.exportThread(THREAD, { as: "bytes", unencrypted: true });
    expect(contains(file, SECRET)).toBe(true);
    expect(await readThreadExportHeader(file)).toMatchObject({ version: 1, serde: "msgpack" });
  });

  it("an encrypted file without its serializer is refused, naming what to pass", async () => {
    const file = await (await encryptedThread()).exportThread(THREAD, { as: "bytes" });
    const { error, wrote } = await importRejected(file);
    expect(error).toBeInstanceOf(ThreadFileError);
    expect((error as Error).message).toMatch(/encrypted.*EncryptedSerializer/);
    expect(wrote).toBe(false);
  });

  it("two records swapped (checksum fixed): refused, nothing written", async () => {
    const file = await (await encryptedThread()).exportThread(THREAD, { as: "bytes" });
    const frames = framesOf(file);
    const checkpointsAt = frames.flatMap((f, i) => (f.kind === 0x43 ? [i] : []));
    const [a, b] = [checkpointsAt[0]!, checkpointsAt[1]!];
    [frames[a], frames[b]] = [frames[b]!, frames[a]!];
    const { error, wrote } = await importRejected(rebuilt(file, frames), await EncryptedSerializer.fromRawKey(KEY));
    expect(error).toBeInstanceOf(DecryptionError);
    expect((error as Error).message).toContain(`thread "${THREAD}"`);
    expect(wrote).toBe(false);
  });

  it("the last checkpoint dropped (counts and checksum fixed): refused, nothing written", async () => {
    const file = await (await encryptedThread()).exportThread(THREAD, { as: "bytes" });
    const frames = framesOf(file);
    frames.splice(frames.length - 2, 1);
    const { error, wrote } = await importRejected(rebuilt(file, frames), await EncryptedSerializer.fromRawKey(KEY));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(wrote).toBe(false);
  });

  it("a record spliced in from another export of the same thread: refused, nothing written", async () => {
    const saver = await encryptedThread();
    const first = await saver.exportThread(THREAD, { as: "bytes" });
    const second = await saver.exportThread(THREAD, { as: "bytes" });
    const frames = framesOf(first);
    frames[1] = framesOf(second)[1]!;
    const { error, wrote } = await importRejected(rebuilt(first, frames), await EncryptedSerializer.fromRawKey(KEY));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(wrote).toBe(false);
  });
});

describe("the task paths record of an encrypted export", () => {
  it("is sealed and bound like the others: moved, or taken from another export, it does not decrypt", async () => {
    const saver = await encryptedThread("~__pregel_pull, agent");
    const first = await saver.exportThread(THREAD, { as: "bytes" });
    const second = await saver.exportThread(THREAD, { as: "bytes" });
    const frames = framesOf(first);
    expect(frames.at(-2)!.kind).toBe(0x70); // `p`, after the last checkpoint
    expect(contains(first, "__pregel_pull")).toBe(false);
    const key = await EncryptedSerializer.fromRawKey(KEY);
    const target = new MemorySaver();
    await importThread(target, first, { serde: key });
    // Imported with their path: a resumed task's write of a path before theirs sorts first, as on the source.
    const at = { configurable: { thread_id: THREAD, checkpoint_ns: "", checkpoint_id: "03" } };
    await target.putWrites(at, [["notes", "resumed"]], "task-0", "~__pregel_pull, a");
    expect((await target.getTuple(at))!.pendingWrites!.map(([task]) => task)).toEqual(["task-0", "task-3"]);

    const spliced = [...frames];
    spliced[spliced.length - 2] = framesOf(second).at(-2)!;
    const moved = [...frames];
    moved.splice(moved.length - 3, 2, frames.at(-2)!, frames.at(-3)!);
    for (const edited of [spliced, moved]) {
      const { error, wrote } = await importRejected(rebuilt(first, edited), key);
      expect(error).toBeInstanceOf(DecryptionError);
      expect(wrote).toBe(false);
    }
  });
});

describe("importThread of untrusted files", () => {
  it('refuses "json" records when asked (refuseJson), and imports them otherwise', async () => {
    const source = new MemorySaver();
    await source.put(
      { configurable: { thread_id: THREAD, checkpoint_ns: "" } },
      { ...emptyCheckpoint(), id: "01", channel_values: { notes: "n" }, channel_versions: { notes: 1 } },
      { source: "input", step: -1, parents: {} } as CheckpointMetadata,
    );
    const file = await exportThread(source, THREAD, { as: "bytes", serde: new JsonPlusSerializer() });
    const refused = await importThread(new MemorySaver(), file, { refuseJson: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ThreadFileError);
    expect((refused as Error).message).toMatch(/"json" records.*refuseJson/);
    await expect(importThread(new MemorySaver(), file)).resolves.toMatchObject({ checkpoints: 1 });
  });
});
