/**
 * The code the Playwright helpers (`./playwright`) run inside a page: seed a
 * thread from an export, read a thread's latest state as plain data, tell
 * whether a run holds it, export it, clear threads or the whole database.
 * `installPageApi()` puts the API on `globalThis[PAGE_API_KEY]`.
 *
 * It is bundled (bundle.ts) into one self-contained script, injected into
 * the page under test, which so does not have to expose the library. The
 * bundle aliases `@langchain/core/load` to plain-load.ts: values are read as
 * plain records and written back unchanged, never revived into classes.
 * Not part of any entry that apps bundle.
 */
import { ThreadImportError, importThread, validateThreadExport } from "../portable/index.js";
import { IndexedDBSaver } from "../saver/index.js";
import { deleteSaverDatabase } from "../saver/delete-database.js";
import { isThreadRunning } from "../runs/index.js";
import { pieceBase64, pieceBytes } from "./page-bytes.js";
import { TASKS, isDeltaSnapshot, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { replayDelta, toData } from "./plain-data.js";
import { SealedFileError, importSerde, serializerFor } from "./page-serde.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { PAGE_API_KEY, type PageApi, type PageDbOptions, type PageThreadState } from "./protocol.js";

/** Databases `clear({ deleteDatabase: true })` deleted in this document: a read of one is not a wrong name. */
const deletedHere = new Set<string>();

/**
 * Refuses a database the page does not have, listing those it has: opening
 * it would create an empty one and answer "no thread", hiding a wrong
 * `dbName`. One this page's clear deleted is named as such, since its name
 * is right. Where `indexedDB.databases()` is missing, nothing is checked.
 */
async function requireDatabase(helper: string, dbName: string): Promise<void> {
  if (typeof indexedDB.databases !== "function") return;
  const names = (await indexedDB.databases()).map((db) => db.name ?? "").filter(Boolean);
  if (names.includes(dbName)) {
    deletedHere.delete(dbName);
    return;
  }
  const has = names.length ? names.map((name) => JSON.stringify(name)).join(", ") : "none";
  if (deletedHere.has(dbName)) {
    throw new Error(
      `${helper}: database "${dbName}" was deleted in this page by clearThreads({ deleteDatabase: true }) (the fixture's langgraph.clear), and nothing has opened it since (the origin has ${has}). Reload the page, or let the app open its IndexedDBSaver again, before reading it.`,
    );
  }
  throw new Error(
    `${helper}: this page's origin has no IndexedDB database "${dbName}"; it has ${has}. Pass the dbName your app gives its IndexedDBSaver, e.g. { dbName: "${names[0] ?? "my-app"}" }; if "${dbName}" is that name, the app has not opened its saver yet (or deleted its database).`,
  );
}

/**
 * Runs `work` with a saver on the database (with the app's serializer when
 * encryption settings are given), closed afterwards so that the app's
 * upgrades and deletes are not blocked. `work` also gets that serializer:
 * `importThread` decodes a file with the serializer it is given, not the
 * saver's, and an encrypted app's exports can only be read with its key.
 */
async function withSaver<T>(
  options: PageDbOptions,
  work: (saver: IndexedDBSaver, serde: SerializerProtocol | undefined) => Promise<T>,
): Promise<T> {
  const serde = await serializerFor(options.encryption);
  const saver = new IndexedDBSaver({
    dbName: options.dbName,
    ...(serde ? { serde } : {}),
    ...(options.blockedTimeoutMs ? { blockedTimeoutMs: options.blockedTimeoutMs } : {}),
  });
  try {
    return await work(saver, serde);
  } catch (error) {
    throw options.encryption ? error : explainEncrypted(options.dbName, error);
  } finally {
    await saver.close();
  }
}

/**
 * Values the default serializer cannot read because the app encrypts them
 * fail with a message that says so, instead of the serializer's own.
 */
function explainEncrypted(dbName: string, error: unknown): unknown {
  const message = error instanceof Error ? error.message : String(error);
  const aboutFile =
    error instanceof SealedFileError || (error as { cause?: unknown } | null)?.cause instanceof SealedFileError;
  if (!/aes-gcm/i.test(message) || aboutFile) return error;
  return new Error(
    `database "${dbName}" is encrypted (its values are sealed with EncryptedSerializer), and no key was given. Pass the app's settings: { encryption: { passphrase, salt } } or { encryption: { key } } (in the fixture: test.use({ langgraphOptions: { encryption } })).`,
    { cause: error },
  );
}

/** Files in transit between Node and this page (transfer.ts), by name. */
const staged = new Map<string, Uint8Array>();
/** Names this page gives the exports it stages (a counter: `crypto.randomUUID` needs a secure context). */
let exportsStaged = 0;

/** Takes a staged file out of {@link staged}; one that is gone means the page navigated meanwhile. */
function takeStaged(helper: string, id: string): Uint8Array {
  const bytes = staged.get(id);
  staged.delete(id);
  if (!bytes)
    throw new Error(`${helper}: the file sent to the page is gone (did the page navigate while it was sent?)`);
  return bytes;
}

/** LangGraph's own channels: `__start__`, `__pregel_tasks`, `branch:to:x`, `join:…`. */
function isInternal(channel: string): boolean {
  return channel.startsWith("__") || channel.includes(":");
}

/**
 * The nodes whose trigger channel (`branch:to:<node>`) holds a value and
 * changed since they last ran (as LangGraph finds its next tasks: a consumed
 * trigger gets a new version but no value), and the node of each pending
 * `Send` (the `__pregel_tasks` channel's value), once per `Send`.
 */
function nextNodes(checkpoint: Checkpoint): string[] {
  const prefix = "branch:to:";
  const next: string[] = [];
  for (const [channel, version] of Object.entries(checkpoint.channel_versions ?? {})) {
    if (!channel.startsWith(prefix) || !Object.hasOwn(checkpoint.channel_values ?? {}, channel)) continue;
    const node = channel.slice(prefix.length);
    const seen = checkpoint.versions_seen?.[node]?.[channel];
    if (seen === undefined || compareVersions(version, seen) > 0) next.push(node);
  }
  // Pending `Send`s (a fan-out), as LangGraph makes one task of each.
  const sends = checkpoint.channel_values?.[TASKS];
  if (Array.isArray(sends)) {
    for (const send of sends) {
      const node = (send as { node?: unknown } | null)?.node;
      if (typeof node === "string") next.push(node);
    }
  }
  return next.sort();
}

/** Channel versions are numbers or strings that sort as they grow (the saver's `"<counter>.<random>"`). */
function compareVersions(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const [x, y] = [String(a), String(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The page API. */
export const pageApi: PageApi = {
  async stage(id, size, offset, base64) {
    let bytes = staged.get(id);
    if (!bytes) staged.set(id, (bytes = new Uint8Array(size)));
    bytes.set(pieceBytes(base64), offset);
  },

  async unstage(id, offset, length) {
    const bytes = staged.get(id);
    if (!bytes) throw new Error("the export staged in the page is gone (did the page navigate while it was read?)");
    return pieceBase64(bytes.subarray(offset, offset + length));
  },

  async drop(ids) {
    for (const id of ids) staged.delete(id);
  },

  async seed(id, options) {
    const file = takeStaged("seedThread", id);
    return withSaver(options, async (saver, serde) => {
      const result = await importThread(saver, file, {
        targetThreadId: options.threadId,
        ifExists: options.ifExists,
        serde: await importSerde(file, serde),
      }).catch((error: unknown) => {
        // importThread's hint names its own options; say it with seedThread's.
        if (error instanceof ThreadImportError && /already has checkpoints/.test(error.message)) {
          throw new ThreadImportError(
            `seedThread: thread "${error.threadId}" already has checkpoints in database "${options.dbName}". Pass { threadId: "…" } to seed it under another id, or { ifExists: "replace" } or { ifExists: "merge" }.`,
            { threadId: error.threadId, written: error.written, rolledBack: error.rolledBack, cause: error },
          );
        }
        throw error;
      });
      return {
        threadId: result.threadId,
        checkpoints: result.checkpoints,
        blobs: result.blobs,
        writes: result.writes,
        source: result.header.source,
      };
    });
  },

  async read(threadId, options) {
    await requireDatabase("readThreadState", options.dbName);
    return withSaver(options, async (saver) => {
      const tuple = await saver.getTuple({
        configurable: { thread_id: threadId, checkpoint_ns: options.checkpointNs ?? "" },
      });
      if (!tuple) return null;
      const values: Record<string, unknown> = { ...tuple.checkpoint.channel_values };
      const metadata = (tuple.metadata ?? {}) as Record<string, unknown>;
      const counters = Object.keys(
        (metadata.counters_since_delta_snapshot as Record<string, unknown> | undefined) ?? {},
      );
      const missing = Object.keys(tuple.checkpoint.channel_versions ?? {}).filter(
        (channel) => !Object.hasOwn(values, channel) && (options.internal || !isInternal(channel)),
      );
      if (missing.length > 0) {
        const history = await saver.getDeltaChannelHistory({ config: tuple.config, channels: missing });
        for (const channel of missing) {
          const entry = history[channel];
          if (!entry) continue;
          // A delta channel: named as one, counted as one by the loop, or seeded by a snapshot.
          const isDelta =
            options.deltaChannels?.includes(channel) || counters.includes(channel) || isDeltaSnapshot(entry.seed);
          if (isDelta) values[channel] = replayDelta(entry.seed, entry.writes);
        }
      }
      for (const channel of Object.keys(values)) if (!options.internal && isInternal(channel)) delete values[channel];
      const { checkpoint_ns: checkpointNs = "", checkpoint_id: checkpointId } = tuple.config.configurable ?? {};
      const state: PageThreadState = {
        threadId,
        checkpointNs: String(checkpointNs),
        checkpointId: String(checkpointId),
        createdAt: tuple.checkpoint.ts,
        values: toData(values) as Record<string, unknown>,
        metadata: toData(metadata) as Record<string, unknown>,
        pendingWrites: (tuple.pendingWrites ?? []).map(([taskId, channel, value]) => [
          taskId,
          channel,
          toData(value) ?? null,
        ]),
        next: nextNodes(tuple.checkpoint),
        interrupts: (tuple.pendingWrites ?? [])
          .filter(([, channel]) => channel === "__interrupt__")
          .flatMap(([, , value]) => (Array.isArray(value) ? value : [value]))
          .map((item) => toData(item) as { value: unknown; id?: string }),
      };
      const parent: unknown = tuple.parentConfig?.configurable?.checkpoint_id;
      if (typeof parent === "string") state.parentCheckpointId = parent;
      return state;
    });
  },

  async activity(threadId, options) {
    // The lock first: a run that ends between the two reads is then seen with its last checkpoint.
    const running = await isThreadRunning(threadId, { dbName: options.dbName });
    const names = typeof indexedDB.databases === "function" ? await indexedDB.databases() : undefined;
    // Not an error here: the app may create its database after the wait begins.
    if (names && !names.some((db) => db.name === options.dbName)) {
      const databases = names.map((db) => db.name ?? "").filter(Boolean);
      return deletedHere.has(options.dbName) ? { running, databases, deletedHere: true } : { running, databases };
    }
    const checkpointId = await withSaver(options, async (saver) => {
      const tuple = await saver.getTuple({
        configurable: { thread_id: threadId, checkpoint_ns: options.checkpointNs ?? "" },
      });
      return tuple?.checkpoint.id;
    });
    return checkpointId === undefined ? { running } : { running, checkpointId };
  },

  async count(threadId, options) {
    await requireDatabase("toHaveCheckpointCount", options.dbName);
    return withSaver(options, async (saver) => {
      let count = 0;
      for await (const _ of saver.list({
        configurable: { thread_id: threadId, checkpoint_ns: options.checkpointNs ?? "" },
      }))
        count++;
      return count;
    });
  },

  async threads(options) {
    await requireDatabase("snapshot", options.dbName);
    return withSaver(options, async (saver) => {
      const ids: string[] = [];
      for await (const thread of saver.listThreads()) ids.push(thread.threadId);
      return ids;
    });
  },

  async exportThread(threadId, options) {
    await requireDatabase("exportThreadFromPage", options.dbName);
    const bytes = await withSaver(options, (saver) => saver.exportThread(threadId, { as: "bytes" }));
    const id = `export-${++exportsStaged}`;
    staged.set(id, bytes);
    return { id, size: bytes.length };
  },

  async restore(ids, options) {
    // Taken out of staging at once: a refused restore must not leave them in the page.
    const files = ids.map(([threadId, id]): [string, Uint8Array] => [threadId, takeStaged("restore", id)]);
    return withSaver(options, async (saver, serde) => {
      // Every file is decoded before anything is deleted: a file this key cannot read (another
      // app's, a wrong passphrase, a corrupt one) is refused with the database left as it was.
      const decoded: { threadId: string; bytes: Uint8Array; serde: SerializerProtocol | undefined }[] = [];
      for (const [threadId, bytes] of files) {
        try {
          const fileSerde = await importSerde(bytes, serde, "restore");
          await validateThreadExport(bytes, { serde: fileSerde, targetThreadId: threadId });
          decoded.push({ threadId, bytes, serde: fileSerde });
        } catch (error) {
          const text = error instanceof Error ? error.message : String(error);
          throw new Error(
            `restore: the snapshot's thread "${threadId}" cannot be read, so nothing was restored or deleted: ${text}`,
            { cause: error },
          );
        }
      }
      // Replacing thread by thread, then deleting the ones the snapshot lacks, keeps every
      // thread readable until its own copy is written.
      for (const { threadId, bytes, serde: fileSerde } of decoded) {
        await importThread(saver, bytes, { targetThreadId: threadId, ifExists: "replace", serde: fileSerde });
      }
      const kept = new Set(decoded.map(({ threadId }) => threadId));
      const extra: string[] = [];
      // Without counts: none is read, and each would walk its thread's rows.
      for await (const thread of saver.listThreads({ count: false }))
        if (!kept.has(thread.threadId)) extra.push(thread.threadId);
      for (const threadId of extra) await saver.deleteThread(threadId);
      return { threadIds: [...kept], deleted: extra };
    });
  },

  async clear(options) {
    if (options.deleteDatabase) {
      // Not required to exist: an app that deleted its own database leaves its wipe marker,
      // which this removes, or the app's next open reports "wiped".
      const forgotten = await deleteSaverDatabase(options.dbName);
      deletedHere.add(options.dbName);
      return { threadIds: [], ...forgotten };
    }
    await requireDatabase("clearThreads", options.dbName);
    const threadIds = await withSaver(options, async (saver) => {
      let ids = options.threadIds;
      if (!ids) {
        ids = [];
        for await (const thread of saver.listThreads()) ids.push(thread.threadId);
      }
      for (const threadId of ids) await saver.deleteThread(threadId);
      return ids;
    });
    return { threadIds, marker: false, journalFiles: 0 };
  },

  async recovery(options) {
    await requireDatabase("recovery", options.dbName);
    const saver = new IndexedDBSaver({ dbName: options.dbName, journal: options.journal ?? "off" });
    try {
      const { kind, recoveredWrites } = await saver.recovery();
      return { kind, recoveredWrites };
    } finally {
      await saver.close();
    }
  },
};

/** Puts {@link pageApi} on `globalThis[PAGE_API_KEY]`. */
export function installPageApi(): void {
  (globalThis as Record<string, unknown>)[PAGE_API_KEY] = pageApi;
}
