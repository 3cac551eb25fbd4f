/**
 * One device of the convergence run (convergence.ts) as plain data in and
 * out: an IndexedDBSaver and a SyncClient behind the operations the run
 * draws. The same code runs in Node, on a fake-indexeddb factory, and in a
 * Chromium page (test/pages/convergence.ts) on the real IndexedDB, where the
 * run calls it over Playwright; nothing here imports a Node module, and
 * every answer survives `page.evaluate`.
 */
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { EncryptedSerializer } from "../../../src/serde/encrypted/index.js";
import { SyncClient } from "../../../src/sync.js";
import type { FetchLike } from "../../../src/sync/transport.js";
import { convergenceGraph } from "./convergence-graph.js";
import { readDeviceRows, type DeviceRows } from "./convergence-rows.js";

/** What a device is made of, drawn by the run from its seed. */
export interface DeviceSetup {
  dbName: string;
  /** The device's link to the servers (a cutting proxy). */
  url: string;
  token: string;
  batchSize: number;
  pullLimit: number;
  encrypted: boolean;
}

/** A sync round's outcome: its counts, or the SyncError it failed with. */
export type RoundOutcome =
  | { ok: true; pushed: number; pushedDeletes: number; pulled: number }
  | { ok: false; retryable: boolean; code?: string; message: string };

/** A run that threw: each error's message (two tools failing in one step are two), and the first stack. */
export interface RunFailure {
  messages: string[];
  stack: string;
}

/** What the run compares of a thread's `getState` between devices. */
export interface StateSummary {
  values: unknown;
  next: string[];
  id: unknown;
  tasks: [string, boolean][];
}

/** The operations the run drives a device through, and what the oracle reads of it. */
export interface DeviceOps {
  /** Runs the graph (`input` null resumes); resolves null, or with what it threw. */
  invoke(input: { log: string[] } | null, configurable: Record<string, unknown>): Promise<RunFailure | null>;
  /** The threads among `threads` whose head holds a failed step (a `__error__` write). */
  failedThreads(threads: string[]): Promise<string[]>;
  /** The root namespace's checkpoint ids of `thread`. */
  rootIds(thread: string): Promise<string[]>;
  copyThread(from: string, to: string): Promise<void>;
  deleteThread(thread: string): Promise<void>;
  prune(thread: string, keepLast: number): Promise<void>;
  deleteForRuns(runId: string, thread: string): Promise<void>;
  /** One sync round. */
  syncNow(): Promise<RoundOutcome>;
  /** The database's rows, for the oracle. */
  rows(full: boolean): Promise<DeviceRows>;
  /** The head checkpoint id of a namespace, as the saver reads it. */
  head(thread: string, ns: string): Promise<string | undefined>;
  state(thread: string): Promise<StateSummary>;
  close(): Promise<void>;
}

/** The salt of every encrypted device: one user, one passphrase, one key record. */
const SALT = "convergence-salt-0001";

const config = (thread: string, extra: Record<string, unknown> = {}) => ({
  configurable: { thread_id: thread, ...extra },
});

/**
 * Opens a device on `indexedDB`; its SyncClient sends every request through
 * `fetch` (the run checks the database before each pull there).
 */
export async function openDevice(setup: DeviceSetup, indexedDB: IDBFactory, fetch: FetchLike): Promise<DeviceOps> {
  const serde = setup.encrypted
    ? await EncryptedSerializer.fromPassphrase("convergence", {
        salt: SALT,
        iterations: 1000,
        insecureTestOnlyWeakKdf: true,
      })
    : undefined;
  const saver = new IndexedDBSaver({ dbName: setup.dbName, indexedDB, serde });
  const sync = new SyncClient({
    saver,
    url: setup.url,
    token: setup.token,
    // One app on every device, whose databases have names of their own.
    app: "convergence",
    batchSize: setup.batchSize,
    pullLimit: setup.pullLimit,
    timeoutMs: 5000,
    fetch,
  });
  const graph = convergenceGraph(saver);
  return {
    async invoke(input, configurable) {
      try {
        await graph.invoke(input, { configurable });
        return null;
      } catch (error) {
        // Both tools failing in one step is an AggregateError of the two.
        const errors = error instanceof AggregateError ? (error.errors as unknown[]) : [error];
        return {
          messages: errors.map((e) => String((e as Error)?.message ?? e)),
          stack: String((error as Error)?.stack ?? error),
        };
      }
    },
    async failedThreads(threads) {
      const failed: string[] = [];
      for (const thread of threads) {
        const head = await saver.getTuple(config(thread));
        if (head?.pendingWrites?.some(([, channel]) => channel === "__error__")) failed.push(thread);
      }
      return failed;
    },
    async rootIds(thread) {
      const ids: string[] = [];
      // Root checkpoints only: a subgraph's id given as the root's parent names no root checkpoint.
      for await (const t of saver.list(config(thread)))
        if (t.config.configurable?.checkpoint_ns === "") ids.push(t.checkpoint.id);
      return ids;
    },
    copyThread: (from, to) => saver.copyThread(from, to),
    deleteThread: (thread) => saver.deleteThread(thread),
    // Keeping one checkpoint snapshots the log (the graph's channels given); keeping two keeps its chain.
    prune: (thread, keepLast) =>
      saver.prune([thread], keepLast === 1 ? { keepLast, channels: graph.channels } : { keepLast }),
    deleteForRuns: (runId, thread) => saver.deleteForRuns([runId], { threadId: thread }),
    async syncNow() {
      try {
        const result = await sync.syncNow();
        return { ok: true, pushed: result.pushed, pushedDeletes: result.pushedDeletes, pulled: result.pulled };
      } catch (error) {
        const e = error as { retryable?: boolean; code?: string; message?: string };
        return { ok: false, retryable: e.retryable === true, code: e.code, message: String(e.message ?? error) };
      }
    },
    rows: (full) => readDeviceRows(indexedDB, setup.dbName, full),
    async head(thread, ns) {
      return (await saver.getTuple(config(thread, { checkpoint_ns: ns })))?.checkpoint.id;
    },
    async state(thread) {
      const snapshot = await graph.getState(config(thread));
      return {
        values: snapshot.values,
        next: [...snapshot.next],
        id: snapshot.config.configurable?.checkpoint_id,
        tasks: snapshot.tasks.map((t): [string, boolean] => [t.name, t.error !== undefined]),
      };
    },
    async close() {
      sync.close();
      await saver.close();
    },
  };
}
