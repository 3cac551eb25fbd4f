/**
 * The crash journal after a delete or a key change (issue 11, item 5), read
 * as an attacker holding the journal's files would: after `deleteThread`,
 * `prune`, `deleteForRuns`, `clearTombstone`, `changeKey` and `rekey`,
 * nothing deleted (plaintext rows of an unencrypted saver, a retired key
 * record, pre-rekey ciphertext) is left in the journal's bytes. Each test
 * first shows the bytes ARE in the journal before the operation. Runs with
 * the memory backend in Node and Chromium, and with the OPFS backend (its
 * real files) in Chromium.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryJournalBackend, resetMemoryJournals } from "../../src/journal/index.js";
import { EncryptedSerializer, type AesGcmKeyRecord } from "../../src/serde/encrypted/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { joinBytes } from "../../src/core/bytes.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { containsText } from "../support/plaintext.js";
import { request, withRaw } from "../support/raw-idb.js";

const inBrowser = typeof navigator !== "undefined" && typeof navigator.storage?.getDirectory === "function";
const backends = inBrowser ? (["memory", "opfs"] as const) : (["memory"] as const);
/** The OPFS backend's folder and file names (src/journal/opfs-backend.ts). */
const OPFS_DIRECTORY = "langgraph-checkpoint-indexeddb";

const created: string[] = [];
afterEach(async () => {
  for (const name of created.splice(0)) await deleteDatabase(name);
  resetMemoryJournals();
});

const serdeFor = (passphrase: string) =>
  EncryptedSerializer.fromPassphrase(passphrase, {
    salt: "journal-purge.test salt",
    iterations: 1_000,
    insecureTestOnlyWeakKdf: true,
  });

async function put(saver: IndexedDBSaver, threadId: string, note: string, parent?: string, runId?: string) {
  const checkpoint = emptyCheckpoint();
  checkpoint.id = uuid6(-1);
  checkpoint.channel_values = { note };
  checkpoint.channel_versions = { note: saver.getNextVersion(undefined) };
  await saver.put(
    { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: parent } },
    checkpoint,
    { source: "loop", step: 0, parents: {}, ...(runId ? { run_id: runId } : {}) } as CheckpointMetadata,
    checkpoint.channel_versions,
  );
  return checkpoint.id;
}

for (const backend of backends) {
  describe(`the ${backend} journal keeps nothing deleted (issue 11, item 5)`, () => {
    const make = (name: string, serde?: EncryptedSerializer) =>
      new IndexedDBSaver({ dbName: name, journal: backend, ...(serde ? { serde } : {}) });

    /** The journal's raw bytes (the saver is closed first: OPFS files are held open). */
    async function journalBytes(saver: IndexedDBSaver): Promise<Uint8Array> {
      await saver.close();
      if (backend === "memory") return MemoryJournalBackend.file(saver.dbName) ?? new Uint8Array(0);
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(OPFS_DIRECTORY);
      const parts: Uint8Array[] = [];
      for (const suffix of [".a.journal", ".b.journal"]) {
        const handle = await dir.getFileHandle(encodeURIComponent(saver.dbName) + suffix).catch(() => undefined);
        if (handle) parts.push(new Uint8Array(await (await handle.getFile()).arrayBuffer()));
      }
      return joinBytes(parts);
    }

    async function fresh(serde?: EncryptedSerializer): Promise<IndexedDBSaver> {
      const name = freshDbName(`journal-purge-${backend}`);
      created.push(name);
      return make(name, serde);
    }

    afterEach(async () => {
      if (backend !== "opfs") return;
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(OPFS_DIRECTORY, { create: true });
      for (const name of created)
        for (const suffix of [".a.journal", ".b.journal", ".active"])
          await dir.removeEntry(encodeURIComponent(name) + suffix).catch(() => undefined);
    });

    it("deleteThread: the deleted thread's plaintext is gone, the kept thread's is there", async () => {
      const saver = await fresh();
      await put(saver, "gone", "PLAIN-gone-thread-4a1");
      await put(saver, "kept", "PLAIN-kept-thread-4a1");
      expect(containsText(await journalBytes(saver), "PLAIN-gone-thread-4a1")).toBe(true);
      await saver.deleteThread("gone");
      const bytes = await journalBytes(saver);
      expect(containsText(bytes, "PLAIN-gone-thread-4a1")).toBe(false);
      expect(containsText(bytes, "PLAIN-kept-thread-4a1")).toBe(true);
    });

    it("clearTombstone: the deleted thread's id is gone with its tombstone", async () => {
      const saver = await fresh();
      await put(saver, "thread-id-7e2c", "x");
      await saver.deleteThread("thread-id-7e2c");
      expect(containsText(await journalBytes(saver), "thread-id-7e2c")).toBe(true); // the tombstone
      await saver.clearTombstone("thread-id-7e2c");
      expect(containsText(await journalBytes(saver), "thread-id-7e2c")).toBe(false);
    });

    it("prune: the pruned checkpoints' plaintext is gone", async () => {
      const saver = await fresh();
      const first = await put(saver, "t", "PLAIN-old-step-91b");
      await put(saver, "t", "PLAIN-new-step-91b", first);
      expect(containsText(await journalBytes(saver), "PLAIN-old-step-91b")).toBe(true);
      await saver.prune(["t"], { strategy: "keep_latest" });
      const bytes = await journalBytes(saver);
      expect(containsText(bytes, "PLAIN-old-step-91b")).toBe(false);
      expect(containsText(bytes, "PLAIN-new-step-91b")).toBe(true);
    });

    it("deleteForRuns: the run's plaintext is gone", async () => {
      const saver = await fresh();
      await put(saver, "t", "PLAIN-run-one-c3d", undefined, "run-1");
      await put(saver, "u", "PLAIN-run-two-c3d", undefined, "run-2");
      expect(containsText(await journalBytes(saver), "PLAIN-run-one-c3d")).toBe(true);
      await saver.deleteForRuns(["run-1"]);
      const bytes = await journalBytes(saver);
      expect(containsText(bytes, "PLAIN-run-one-c3d")).toBe(false);
      expect(containsText(bytes, "PLAIN-run-two-c3d")).toBe(true);
    });

    const wrappedKey = async (name: string) =>
      (
        (await withRaw(name, (db) => request(db.transaction("meta").objectStore("meta").get("key")))) as {
          value: AesGcmKeyRecord;
        }
      ).value.keys[0]!.wrapped;

    for (const rewrapOnly of [false, true]) {
      it(`changeKey${rewrapOnly ? " (rewrapOnly)" : ""}: the old key record is gone`, async () => {
        const saver = await fresh(await serdeFor("old"));
        await put(saver, "t", "secret");
        const bytes = await journalBytes(saver);
        const oldWrapped = await wrappedKey(saver.dbName);
        expect(containsBytes(bytes, oldWrapped)).toBe(true);
        await saver.changeKey(await serdeFor("new"), { rewrapOnly });
        expect(containsBytes(await journalBytes(saver), oldWrapped)).toBe(false);
      });
    }

    it("rekey: the pre-rekey ciphertext and the retired key are gone", async () => {
      const saver = await fresh(await serdeFor("pass"));
      await put(saver, "t", "secret");
      const bytes = await journalBytes(saver);
      const oldWrapped = await wrappedKey(saver.dbName);
      // The value's ciphertext: inline in its checkpoint row (row format 2; a rekey re-seals it there).
      const blob = Object.values(
        (
          (await withRaw(saver.dbName, (db) =>
            request(db.transaction("checkpoints").objectStore("checkpoints").getAll()),
          )) as CheckpointRow[]
        )[0]!.inline!,
      )[0]![1];
      expect(containsBytes(bytes, blob)).toBe(true);
      await saver.rekey();
      const after = await journalBytes(saver);
      expect(containsBytes(after, blob)).toBe(false);
      expect(containsBytes(after, oldWrapped)).toBe(false);
    });
  });
}

function containsBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}
