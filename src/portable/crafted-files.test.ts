/**
 * Files made by hand, with a correct checksum and counts, that exportThread
 * never writes: validation refuses them with a ThreadFileError before the
 * import writes or deletes anything, even under `ifExists: "replace"`.
 * Node and Chromium.
 */
import { MemorySaver } from "@langchain/langgraph/web";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { crc32 } from "../core/crc32.js";
import { IndexedDBSaver } from "../saver/index.js";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { chat } from "../../test/support/chat-graph.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { rawThread } from "../../test/support/portable-scenario.js";
import {
  FORMAT_INTERNALS,
  ThreadFileError,
  exportThread,
  importThread,
  validateThreadExport,
  type CheckpointRecord,
  type ImportThreadOptions,
} from "./index.js";

const track = trackSavers<IndexedDBSaver>();
const serde = new MsgpackSerializer();
const { SIGNATURE, KIND, FRAME_HEAD } = FORMAT_INTERNALS;
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** One frame's bytes. */
function frameBytes(kind: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEAD + payload.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, FRAME_HEAD);
  return out;
}

/** A file of the header and these frames, with the trailer an attacker would compute. */
function assemble(header: Record<string, unknown>, frames: Uint8Array[], counts: Record<string, number>): Uint8Array {
  const parts = [SIGNATURE, frameBytes(KIND.HEADER, json({ ...header, counts })), ...frames];
  const body = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  parts.reduce((offset, part) => (body.set(part, offset), offset + part.length), 0);
  const trailer = frameBytes(KIND.END, json({ ...counts, crc32: crc32(0, body).toString(16).padStart(8, "0") }));
  const out = new Uint8Array(body.length + trailer.length);
  out.set(body);
  out.set(trailer, body.length);
  return out;
}

/** An unencrypted export of a two-turn chat, its `C` records changed by `edit`, counts and checksum fixed up. */
async function craftedFile(edit: (records: CheckpointRecord[]) => void): Promise<Uint8Array> {
  const source = track(new IndexedDBSaver({ dbName: freshDbName("crafted-source") }));
  await chat(source, "t", ["one", "two"], true);
  const bytes = await exportThread(source, "t", { as: "bytes" });
  const frames: { kind: number; payload: Uint8Array }[] = [];
  for (let offset = SIGNATURE.length; offset < bytes.length;) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
    frames.push({ kind: bytes[offset]!, payload: bytes.subarray(offset + FRAME_HEAD, offset + FRAME_HEAD + length) });
    offset += FRAME_HEAD + length;
  }
  const header = JSON.parse(new TextDecoder().decode(frames[0]!.payload)) as Record<string, unknown>;
  const records: CheckpointRecord[] = [];
  for (const { kind, payload } of frames) {
    if (kind === KIND.CHECKPOINT) records.push((await serde.loadsTyped("msgpack", payload)) as CheckpointRecord);
  }
  edit(records);
  // Every value first (a C record may only use earlier B records), then the checkpoints.
  const body = frames.filter(({ kind }) => kind === KIND.BLOB).map(({ kind, payload }) => frameBytes(kind, payload));
  const blobs = body.length;
  for (const record of records) body.push(frameBytes(KIND.CHECKPOINT, (await serde.dumpsTyped(record))[1]));
  const writes = records.reduce((n, record) => n + record.writes.length, 0);
  return assemble(header, body, { checkpoints: records.length, blobs, writes });
}

/**
 * Imports `file` with `ifExists: "replace"` over a thread "t" the target
 * holds; expects a ThreadFileError matching `pattern` and "t" unchanged.
 */
async function expectRefused(
  target: BaseCheckpointSaver,
  file: Uint8Array,
  pattern: RegExp,
  options: ImportThreadOptions = {},
): Promise<void> {
  await chat(target, "t", ["my local conversation"], true);
  const before = await rawThread(target, "t");
  const error = await importThread(target, file, { ...options, ifExists: "replace" }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ThreadFileError);
  expect((error as Error).message).toMatch(pattern);
  expect(await rawThread(target, "t")).toEqual(before);
}

describe("a file without checkpoints", () => {
  const header = {
    format: "langgraph-thread",
    threadId: "t",
    source: "IndexedDBSaver",
    namespaces: [],
    exportedAt: "2026-01-01T00:00:00.000Z",
    generator: "langgraph-checkpoint-indexeddb",
  };
  const none = { checkpoints: 0, blobs: 0, writes: 0 };

  it("is refused, and does not delete the thread it would replace", async () => {
    const file = assemble({ ...header, version: 1, serde: "msgpack" }, [], none);
    await expect(validateThreadExport(file)).rejects.toThrow(ThreadFileError);
    await expectRefused(track(new IndexedDBSaver({ dbName: freshDbName("crafted") })), file, /no checkpoint/);
    await expectRefused(new MemorySaver(), file, /no checkpoint/);
  });

  it("is refused as an encrypted (version 2) file forged without the key", async () => {
    const key = await EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(7));
    const file = assemble({ ...header, version: 2, serde: "msgpack+aes-gcm", exportId: "00".repeat(16) }, [], none);
    const target = track(new IndexedDBSaver({ dbName: freshDbName("crafted"), serde: key }));
    await expectRefused(target, file, /no checkpoint/, { serde: key });
  });
});

describe("parent links that are not a tree", () => {
  const targets = () => [track(new IndexedDBSaver({ dbName: freshDbName("crafted") })), new MemorySaver()];

  it("a cycle through the namespace is refused (a MemorySaver target would loop reading it)", async () => {
    const file = await craftedFile((records) => {
      records[0]!.parent = records[records.length - 1]!.id;
    });
    await expect(validateThreadExport(file)).rejects.toThrow(/cycle/);
    for (const target of targets()) await expectRefused(target, file, /cycle/);
  });

  it("a checkpoint that is its own parent is refused", async () => {
    const file = await craftedFile((records) => {
      records[1]!.parent = records[1]!.id;
    });
    for (const target of targets()) await expectRefused(target, file, /cycle/);
  });

  it("a parent the file does not hold is still accepted (a pruned thread's oldest checkpoint)", async () => {
    const file = await craftedFile((records) => {
      records[0]!.parent = "gone";
    });
    await expect(validateThreadExport(file)).resolves.toMatchObject({ threadId: "t" });
  });
});

describe("ids the savers refuse", () => {
  const cases: [string, (records: CheckpointRecord[]) => void, RegExp][] = [
    [
      "a task id",
      (records) => void records.at(-1)!.writes.push(["constructor", "messages", []]),
      /"task_id".*constructor/,
    ],
    [
      "a checkpoint id",
      (records) => {
        const last = records.at(-1)!;
        last.id = last.checkpoint.id = "__proto__";
      },
      /"checkpoint\.id".*__proto__/,
    ],
    ["a parent id", (records) => void (records[0]!.parent = "prototype"), /"checkpoint_id".*prototype/],
    // U+0000: what the sync server's PostgreSQL text cannot hold (a lone surrogate would not survive msgpack).
    ["a write's channel", (records) => void records.at(-1)!.writes.push(["task", "a\u0000b", 1]), /"channel".*U\+0000/],
  ];
  for (const [what, edit, pattern] of cases) {
    it(`${what} is refused by validation, before a replace deletes anything`, async () => {
      const file = await craftedFile(edit);
      await expect(validateThreadExport(file)).rejects.toThrow(ThreadFileError);
      await expectRefused(track(new IndexedDBSaver({ dbName: freshDbName("crafted") })), file, pattern);
      await expectRefused(new MemorySaver(), file, pattern);
    });
  }
});
