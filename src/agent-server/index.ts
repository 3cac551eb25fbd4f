/**
 * agent-server/: the LangGraph Agent Server routes the SDK's `Client` and
 * `useStream` call, served by a `fetch` function in the page or a worker, on
 * the IndexedDB saver and store. Runs go through runs/ (`runOnThread`), thread
 * records through idb/. It imports runs/, idb/, core/, rows/ (the saver's id
 * rules), and Hono and LangGraph (optional peers of this entry only).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseStore, ChannelVersions, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RunSaver } from "../runs/coordinator.js";
import type { RunLockManager } from "../runs/locks.js";
import { bindGraphs, type ServedGraph } from "./graphs.js";
import { createRoutes } from "./routes.js";
import { RunRegistry } from "./runs.js";
import { threadStatusHooks } from "./thread-status.js";
import { RunLog } from "./run-log.js";
import { eventSealing } from "./event-seal.js";
import { LeftoverRecords, LeftoverThreads, sweepLeftovers } from "./leftover-threads.js";
import { openAgentDatabase } from "./schema.js";
import { IndexedDBThreadStore, type AgentThreadStore } from "./threads.js";
import { syncsBetweenDevices } from "../saver/syncing.js";

export { IndexedDBThreadStore } from "./threads.js";
export { exposeLocalAgentServer, connectLocalAgentServer } from "./port.js";
export type { MessageEndpoint, RemoteAgentServer } from "./port.js";
export type {
  AgentThreadStore,
  IndexedDBThreadStoreParams,
  ThreadRecord,
  ThreadStatus,
  ThreadMetadata,
  ThreadSearchOptions,
} from "./threads.js";
export type { ServedGraph } from "./graphs.js";
export type { RunRecord, RunStatus } from "./records.js";
export type { StreamMode } from "./stream.js";

/** What the server needs of its saver: an `IndexedDBSaver` has it all. */
export interface AgentServerSaver extends RunSaver {
  deleteThread(threadId: string): Promise<void>;
  /** Copies every checkpoint and pending write of a thread under a new id (`threads.copy`). */
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void>;
  /** Deletes a run's checkpoints (`runs.delete`; the graph's channels keep delta channels whole). */
  deleteForRuns(runIds: string[], options: { threadId: string; channels?: Record<string, unknown> }): Promise<void>;
  /** Keeps the newest checkpoint of each namespace (`threads.prune` with `"keep_latest"`). */
  prune(threadIds: string[], options: { strategy: "keep_latest"; channels?: Record<string, unknown> }): Promise<void>;
  /** Stores a checkpoint (`threads.patchState` puts the latest one again, its metadata merged). */
  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig>;
}

/** Options of {@link createLocalAgentServer}. */
export interface LocalAgentServerOptions {
  /** The graphs served, by the `assistant_id` clients name them with. */
  graphs: Readonly<Record<string, ServedGraph>>;
  /** The checkpoint saver every graph runs on (an `IndexedDBSaver`). */
  saver: AgentServerSaver;
  /** The long-term memory store the graphs get (an `IndexedDBStore`), if any. */
  store?: BaseStore;
  /**
   * Where thread records live. Default: an {@link IndexedDBThreadStore} in
   * the database `<saver.dbName>-agent-threads`, beside the saver's. Run
   * records and their events live in that database whatever this is.
   */
  threads?: AgentThreadStore;
  /** Lock manager of `runOnThread`; default `navigator.locks` (or its in-process fallback). */
  locks?: RunLockManager;
  /** An `IDBFactory` for the default thread store; default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
  /**
   * How many of a thread's newest runs keep their stream events (default 50):
   * when a run ends, older finished runs' events are deleted and `joinStream`
   * replays none of them; their records (status, times) stay.
   */
  keepRunEvents?: number;
}

/** A local agent server: a `fetch` handler to give the SDK's `Client`, and `close`. */
export interface LocalAgentServer {
  /** Answers an Agent Server request (any origin; only the path, query and body are read). */
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Cancels the runs still going, waits for them, and closes the thread store. */
  close(): Promise<void>;
}

/**
 * Serves the LangGraph Agent Server routes from the page (or a worker) on
 * IndexedDB: threads, state and history, state updates, runs with streaming
 * (`values`, `updates`, `messages-tuple`, `custom`, `events`), `Command`
 * resume, forks from a checkpoint, and the four multitask strategies across
 * tabs through `runOnThread`.
 *
 * @example
 * ```ts
 * const server = await createLocalAgentServer({ graphs: { agent: graph }, saver, store });
 * const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch } });
 * ```
 */
export async function createLocalAgentServer(options: LocalAgentServerOptions): Promise<LocalAgentServer> {
  const { saver, store } = options;
  const graphs = bindGraphs(options.graphs, saver, store);
  const dbName = `${saver.dbName}-agent-threads`;
  const threads = options.threads ?? new IndexedDBThreadStore({ dbName, indexedDB: options.indexedDB });
  const db = openAgentDatabase(dbName, options.indexedDB);
  // Beside an encrypting saver, each run's events are sealed by its serializer (event-seal.ts).
  const log = new RunLog(db, options.keepRunEvents, eventSealing(saver, dbName));
  const records = new LeftoverRecords(db);
  // The hooks ask the registry whether another run goes; it is made with them, hence the getter.
  const runs: RunRegistry = new RunRegistry(
    saver,
    log,
    threadStatusHooks(threads, graphs, (threadId, runId) => runs.threadBusy(threadId, runId)),
    options.locks,
  );
  const channelsOf = (graphId: string | undefined) =>
    graphId === undefined
      ? undefined
      : (graphs[graphId] as { channels?: Record<string, unknown> } | undefined)?.channels;
  // The record last: a thread whose delete failed halfway is still a leftover.
  const erase = async (threadId: string) => {
    await saver.deleteThread(threadId);
    await log.deleteThread(threadId);
    await threads.delete(threadId);
    await records.remove(threadId);
  };
  const eraseThread = (threadId: string) => runs.deleteThread(threadId, () => erase(threadId));
  const leftovers = new LeftoverThreads(eraseThread);
  // What a server closed before deleting its runs' own threads left (a reload, another tab's).
  await sweepLeftovers({
    records,
    whileIdle: (threadId, work) => runs.whileIdle(threadId, work),
    createdAt: async (threadId) => (await threads.get(threadId))?.created_at,
    erase,
  });
  // A thread deleted is no leftover: a retry after it would delete a thread created again under its id.
  const deleteThread = async (threadId: string) => {
    await eraseThread(threadId);
    leftovers.forget(threadId);
  };
  // Ends the thread streams still open at close: each would otherwise look for runs (and open the
  // databases again) at each notice or slow look for as long as its client stays.
  const closing = new AbortController();
  const app = createRoutes({
    closed: closing.signal,
    graphs,
    threads,
    runs,
    store,
    dbName: saver.dbName,
    locks: options.locks,
    copyThread: (sourceThreadId, targetThreadId) => saver.copyThread(sourceThreadId, targetThreadId),
    pruneCheckpoints: async (threadId, graphId) => {
      // The graph's channels: the kept checkpoint gets a snapshot of a delta channel, not its ancestors.
      const channels = channelsOf(graphId);
      await saver.prune([threadId], { strategy: "keep_latest", ...(channels ? { channels } : {}) });
    },
    deleteRun: async (run) => {
      // The graph's channels: a delta channel of the checkpoints left after the run keeps its history.
      const channels = channelsOf(run.assistant_id);
      await saver.deleteForRuns([run.run_id], { threadId: run.thread_id, ...(channels ? { channels } : {}) });
      await log.deleteRun(run.run_id);
    },
    deleteThread,
    recordLeftover: async (threadId) => {
      const thread = await threads.get(threadId);
      if (thread) await records.add(threadId, thread.created_at);
    },
    deleteThreadLater: (threadId) => leftovers.add(threadId),
    patchStateMetadata: async (threadId, metadata) => {
      // The sync server stores a checkpoint once: a row put again under its id would stay on this device
      // (and its copies on the others keep the old metadata), so nothing is written.
      if (await syncsBetweenDevices(saver)) return "synced";
      const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
      if (!tuple) return "no checkpoint";
      // Put again under its own id and parent: the same row, its metadata merged. Every channel's
      // version is given, so every value is stored with it (a row may hold its small values inline).
      const parentId = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
      const config = { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: parentId } };
      const merged = { ...tuple.metadata, ...metadata } as CheckpointMetadata;
      await saver.put(config, tuple.checkpoint, merged, tuple.checkpoint.channel_versions);
      return "patched";
    },
  });
  let closed = false;
  return {
    fetch: async (input, init) => {
      if (closed) throw new Error("The local agent server is closed.");
      const request = new Request(input, init);
      const { signal } = request;
      // As a fetch does (and the worker mode's): a request whose signal aborts before its answer is
      // rejected with the abort's reason. The routes see the abort too (on_disconnect "cancel").
      const reason = () => signal.reason ?? new DOMException("The request was aborted.", "AbortError");
      if (signal.aborted) throw reason();
      const answer = Promise.resolve(app.fetch(request));
      let onAbort = (): void => undefined;
      const aborted = new Promise<never>((_resolve, reject) => {
        onAbort = () => {
          reject(reason());
          // The answer no one reads: its body let go (a stream's run follower ends).
          answer
            .then(
              (response) => response.body?.cancel(),
              () => undefined,
            )
            .catch(() => undefined);
        };
        signal.addEventListener("abort", onAbort, { once: true });
      });
      try {
        return await Promise.race([answer, aborted]);
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      closing.abort();
      await runs.close();
      // After the runs: one cancelled by the close may leave its own thread to delete again.
      await leftovers.close();
      await threads.close();
      await log.close();
    },
  };
}
