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
import { EncryptedSerializer } from "../serde/encrypted/index.js";
import { chat } from "../../test/support/chat-graph.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { rawThread } from "../../test/support/portable-scenario.js";
import {
  FORMAT_INTERNALS,
  ThreadFileError,
  importThread,
  validateThreadExport,
  type ImportThreadOptions,
} from "./index.js";

const track = trackSavers<IndexedDBSaver>();
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
