/**
 * The golden file of export format version 2 (issue 11, item 6):
 * test/golden/export-v2.json, written by test/golden/generate-export2.ts. An
 * encrypted IndexedDBSaver's export of the golden thread, its records sealed
 * with `EncryptedSerializer.fromRawKey(RAW_KEY)` and bound to the file and
 * their place. Version 2 files carry a random export id and random IVs: with
 * the same fixed inputs (test/golden/export2.ts: the clock, a seeded getRandomValues)
 * the export is deterministic, so re-exports are compared byte for byte.
 * The same saver's `unencrypted: true` export is version 1 and, with the
 * same clock, the very bytes of test/golden/export.json. Files written since
 * carry the writes' task paths in one more frame: test/golden/export-paths.json
 * (test/golden/generate-export-paths.ts) holds both files with it. Node and Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { EncryptedSerializer, IndexedDBSaver, importThread, readThreadExportHeader } from "../../src/index.js";
import { inspectEnvelope } from "../../src/serde.js";
import exportGolden from "../golden/export.json";
import export2Golden from "../golden/export-v2.json";
import exportPathsGolden from "../golden/export-paths.json";
import { storedTaskPaths } from "../golden/export-paths.js";
import { exportFrames, withFixedInputs, withoutTaskPaths } from "../golden/export2.js";
import { RAW_KEY, comparable, deleteDatabase, fromBase64, hex, writeGoldenThread } from "../golden/shared.js";
import { freshDbName } from "../support/databases.js";

const file = fromBase64(export2Golden.file);
const header = (export2Golden.importResult as { header: Record<string, unknown> }).header;
const THREAD = "t-golden";
const key = () => EncryptedSerializer.fromRawKey(RAW_KEY);

const created: string[] = [];
const savers: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const saver of savers.splice(0)) await saver.close();
  for (const name of created.splice(0)) await deleteDatabase(indexedDB, name);
});

function newSaver(serde?: EncryptedSerializer): IndexedDBSaver {
  const name = freshDbName("golden-export2");
  created.push(name);
  const saver = new IndexedDBSaver({ dbName: name, serde });
  savers.push(saver);
  return saver;
}

async function listed(saver: IndexedDBSaver): Promise<unknown> {
  const out: unknown[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: THREAD } })) out.push(tuple);
  return comparable(out);
}

/** Exports the golden thread of `saver` with the golden's fixed inputs. */
async function exportFixed(
  saver: IndexedDBSaver,
  options: { unencrypted?: boolean; serde?: EncryptedSerializer } = {},
) {
  await saver.getTuple({ configurable: { thread_id: THREAD } }); // open before faking Date
  return withFixedInputs(() => saver.exportThread(THREAD, { ...options, as: "bytes" }));
}

describe(".lgthread export format version 2 (encrypted)", () => {
  it("keeps the signature, frame kinds, a version 2 header and sealed, row-bound records", async () => {
    expect(hex(file.subarray(0, 8))).toBe("894c47540d0a1a0a");
    expect(await readThreadExportHeader(file)).toEqual(header);
    expect(header).toMatchObject({ version: 2, serde: "msgpack+aes-gcm", threadId: THREAD });
    expect(header.exportId).toMatch(/^[0-9a-f]{32}$/);
    // The same thread as the version 1 golden: the same counts and namespaces.
    const v1Header = (exportGolden.importResult as { header: Record<string, unknown> }).header;
    expect([header.counts, header.namespaces]).toEqual([v1Header.counts, v1Header.namespaces]);
    const all = exportFrames(file);
    const kinds = all.map(([kind]) => kind);
    expect([kinds[0], kinds.at(-1)]).toEqual(["H", "E"]);
    expect(new Set(kinds.slice(1, -1))).toEqual(new Set(["B", "C"]));
    const keyId = await (await key()).keyId();
    for (const [kind, payload] of all.slice(1, -1)) {
      expect([kind, inspectEnvelope(payload)]).toEqual([
        kind,
        { version: 1, innerType: "msgpack", keyId, binding: "row" },
      ]);
    }
    // No plaintext of the thread: its messages and metadata are only inside the envelopes.
    const text = new TextDecoder("latin1").decode(file);
    for (const secret of ["hello", "hi there", "approve?", "run-2", "interrupt-1"]) expect(text).not.toContain(secret);
  });

  it("imports with the key into IndexedDBSaver as recorded: the thread of the version 1 golden", async () => {
    const saver = newSaver();
    expect(comparable(await importThread(saver, file, { serde: await key() }))).toEqual(export2Golden.importResult);
    const thread = await listed(saver);
    expect(thread).toEqual(export2Golden.indexeddb);
    expect(thread).toEqual(exportGolden.indexeddb);
  });

  it("does not import under another key: DecryptionError, nothing written", async () => {
    const saver = newSaver();
    const other = await EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(7));
    await expect(importThread(saver, file, { serde: other })).rejects.toBeInstanceOf(DecryptionError);
    expect(await saver.getTuple({ configurable: { thread_id: THREAD } })).toBeUndefined();
  });

  it("re-exports to the same bytes with the same fixed inputs, from an encrypted or a plain saver", async () => {
    const encrypted = newSaver(await key());
    await importThread(encrypted, file, { serde: await key() });
    expect(hex(await exportFixed(encrypted))).toBe(hex(file));
    // A plain saver holding the thread, exporting through the same key.
    const plain = newSaver();
    await importThread(plain, file, { serde: await key() });
    expect(hex(await exportFixed(plain, { serde: await key() }))).toBe(hex(file));
  });

  it("writes the golden thread afresh to the same bytes, plus its task paths; unencrypted: true gives export.json's bytes", async () => {
    const saver = newSaver(await key());
    await writeGoldenThread(saver);
    // The goldens predate task paths: the thread's (it has some) follow in a frame of their own.
    const fresh = await exportFixed(saver);
    expect(hex(withoutTaskPaths(fresh))).toBe(hex(file));
    // Imported, the paths are the target's own: its export is the same file again.
    const imported = newSaver(await key());
    await importThread(imported, fresh, { serde: await key() });
    expect(hex(await exportFixed(imported))).toBe(hex(fresh));
    expect(export2Golden.unencrypted.sameAsExportJson).toBe(true);
    expect(hex(withoutTaskPaths(await exportFixed(saver, { unencrypted: true })))).toBe(
      hex(fromBase64(exportGolden.file)),
    );
  });
});

describe("the task paths golden (export-paths.json: files with the `p` frame)", () => {
  const withPaths = fromBase64(exportPathsGolden.file);
  const plainWithPaths = fromBase64(exportPathsGolden.unencrypted);

  it("is the version 2 and version 1 goldens plus one frame: readers before it skip it", () => {
    expect(hex(withoutTaskPaths(withPaths))).toBe(hex(file));
    expect(hex(withoutTaskPaths(plainWithPaths))).toBe(hex(fromBase64(exportGolden.file)));
  });

  it("imports each write under its recorded task path, and re-exports to the same bytes", async () => {
    const encrypted = newSaver(await key());
    await importThread(encrypted, withPaths, { serde: await key() });
    expect(await storedTaskPaths(encrypted.dbName)).toEqual(exportPathsGolden.taskPaths);
    expect(hex(await exportFixed(encrypted))).toBe(hex(withPaths));
    const plain = newSaver();
    await importThread(plain, plainWithPaths);
    expect(await storedTaskPaths(plain.dbName)).toEqual(exportPathsGolden.taskPaths);
    expect(hex(await exportFixed(plain, { unencrypted: true }))).toBe(hex(plainWithPaths));
  });
});
