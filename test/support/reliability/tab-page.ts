/**
 * A "tab" for `test/suites/tabs.browser.test.ts`: loaded as a module script into a
 * same-origin iframe (its own document, JS realm and IndexedDB connections,
 * sharing the origin's databases with the test page), it drives its own
 * IndexedDBSaver and raw connections on request. Everything crosses the
 * realm boundary as JSON.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { IndexedDBSaver } from "../../../src/index.js";
import { newerSchemaFactory } from "./factories.js";
import { openRaw } from "./raw.js";
import { runSupersteps, type Recorded } from "./supersteps.js";

// Vitest's browser mode rewrites import() into __vitest_browser_runner__.wrapDynamicImport(...)
// in the modules it serves. This frame is a page of our own with no runner in it; give it the
// same pass-through that Vitest gives workers, or the saver's on-demand modules cannot load.
(globalThis as { __vitest_browser_runner__?: unknown }).__vitest_browser_runner__ ??= {
  wrapDynamicImport: (load: () => unknown) => load(),
};

/** An error as plain data. */
function describeError(error: unknown) {
  const e = error as { name?: string; message?: string; cause?: { name?: string } } | null;
  return { name: e?.name, message: e?.message, cause: e?.cause?.name };
}

type Result<T> =
  { ok: true; value: T; ms: number } | { ok: false; error: ReturnType<typeof describeError>; ms: number };

async function attempt<T>(work: () => Promise<T>): Promise<string> {
  const started = performance.now();
  let result: Result<T>;
  try {
    result = { ok: true, value: await work(), ms: performance.now() - started };
  } catch (error) {
    result = { ok: false, error: describeError(error), ms: performance.now() - started };
  }
  return JSON.stringify(result);
}

let saver: IndexedDBSaver | undefined;
let raw: IDBDatabase | undefined;
const runs = new Map<string, { recorded: Recorded; done: Promise<unknown> }>();

const api = {
  /** Opens this tab's saver (optionally as a newer release, with a blocked timeout). */
  open(dbName: string, options: { newer?: boolean; blockedTimeoutMs?: number } = {}) {
    saver = new IndexedDBSaver({
      dbName,
      blockedTimeoutMs: options.blockedTimeoutMs,
      indexedDB: options.newer ? newerSchemaFactory() : undefined,
    });
  },
  put(threadId: string, value: string) {
    return attempt(async () => {
      const checkpoint = {
        ...emptyCheckpoint(),
        id: uuid6(0),
        channel_values: { v: value },
        channel_versions: { v: saver!.getNextVersion(undefined) },
      };
      await saver!.put(
        { configurable: { thread_id: threadId, checkpoint_ns: "" } },
        checkpoint,
        { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
        {
          v: checkpoint.channel_versions.v,
        },
      );
      return checkpoint.id;
    });
  },
  get(threadId: string) {
    return attempt(
      async () => (await saver!.getTuple({ configurable: { thread_id: threadId } }))?.checkpoint.channel_values ?? null,
    );
  },
  close() {
    return attempt(async () => saver?.close());
  },
  /** Starts a graph of `steps` supersteps on this tab's saver. */
  startSupersteps(runId: string, threadId: string, label: string, steps: number) {
    const recorded: Recorded = { puts: [], writes: [] };
    const done = runSupersteps(saver!, threadId, label, steps, recorded);
    done.catch(() => undefined);
    runs.set(runId, { recorded, done });
  },
  /** What a run recorded so far (JSON). */
  recorded(runId: string) {
    return JSON.stringify(runs.get(runId)!.recorded);
  },
  /** Waits for a run to end. */
  finished(runId: string) {
    return attempt(() => runs.get(runId)!.done.then(() => undefined));
  },
  /** Opens a raw connection at the current version that ignores `versionchange` (an old build). */
  holdRaw(dbName: string) {
    return attempt(async () => {
      raw = await openRaw(dbName);
      raw.onversionchange = () => undefined;
      return raw.version;
    });
  },
  releaseRaw() {
    raw?.close();
    raw = undefined;
  },
  /** Opens `dbName` at `version` with one more store (or aborts that upgrade), then closes. */
  upgrade(dbName: string, version: number, abort = false) {
    let blocked = false;
    return attempt(async () => {
      const db = await openRaw(
        dbName,
        version,
        (db, tx) => (abort ? tx.abort() : db.createObjectStore(`added_in_v${version}`)),
        indexedDB,
        () => (blocked = true),
      );
      db.close();
      return { version: db.version, blocked };
    });
  },
  deleteDatabase(dbName: string) {
    return attempt(
      () =>
        new Promise<{ blocked: boolean }>((resolve, reject) => {
          let blocked = false;
          const request = indexedDB.deleteDatabase(dbName);
          request.onblocked = () => (blocked = true);
          request.onsuccess = () => resolve({ blocked });
          request.onerror = () => reject(request.error);
        }),
    );
  },
};

export type TabApi = typeof api;

(window as unknown as { reliabilityTab: TabApi }).reliabilityTab = api;
