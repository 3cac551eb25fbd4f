/**
 * A local agent server for a test, serving `agentGraph()` (or the graphs
 * given) on a fresh saver database, with an SDK `Client` on its `fetch`.
 * `closeServers()` (in an `afterEach`/`afterAll`) closes every one opened,
 * then deletes their databases (servers of two tabs may share one).
 */
import { Client } from "@langchain/langgraph-sdk";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { IndexedDBStore } from "../../../src/store/index.js";
import {
  createLocalAgentServer,
  type AgentThreadStore,
  type LocalAgentServer,
  type ServedGraph,
} from "../../../src/agent-server/index.js";
import type { RunLockManager } from "../../../src/runs/locks.js";
import { deleteDatabase, freshDbName } from "../databases.js";
import { agentGraph } from "./graph.js";

const opened: { close: () => Promise<void>; databases: string[] }[] = [];

/** Where a second server goes (the database of another: a second tab), and what it is made of. */
export interface ServerPlace {
  dbName?: string;
  locks?: RunLockManager;
  /** The graphs served; default `{ agent: agentGraph() }`. */
  graphs?: Readonly<Record<string, unknown>>;
  /** The saver (on `dbName`); default a new IndexedDBSaver. */
  saver?: IndexedDBSaver;
  /** The thread store; default the server's own. */
  threads?: AgentThreadStore;
  keepRunEvents?: number;
  /** The agent database's `IDBFactory`; default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
}

/**
 * Opens a server (with an IndexedDBStore when `withStore`), and a Client on
 * it: on a fresh database, or on `place.dbName` (another tab's).
 */
export async function openServer<State extends Record<string, unknown> = Record<string, unknown>>(
  prefix: string,
  withStore = false,
  place: ServerPlace = {},
): Promise<{ server: LocalAgentServer; saver: IndexedDBSaver; client: Client<State>; dbName: string }> {
  const dbName = place.dbName ?? place.saver?.dbName ?? freshDbName(prefix);
  const saver = place.saver ?? new IndexedDBSaver({ dbName });
  const store = withStore ? new IndexedDBStore({ dbName: `${dbName}-store` }) : undefined;
  const server = await createLocalAgentServer({
    graphs: (place.graphs ?? { agent: agentGraph() }) as Readonly<Record<string, ServedGraph>>,
    saver,
    store,
    locks: place.locks,
    threads: place.threads,
    keepRunEvents: place.keepRunEvents,
    indexedDB: place.indexedDB,
  });
  opened.push({
    close: async () => {
      await server.close();
      await saver.close();
      await store?.close();
    },
    databases: [dbName, `${dbName}-agent-threads`, `${dbName}-store`],
  });
  const client = new Client<State>({
    apiUrl: "http://local.invalid",
    callerOptions: { fetch: server.fetch, maxRetries: 0 },
  });
  return { server, saver, client, dbName };
}

/** Closes every server `openServer` opened, then deletes their databases. */
export async function closeServers(): Promise<void> {
  const servers = opened.splice(0);
  for (const { close } of servers) await close();
  for (const name of new Set(servers.flatMap(({ databases }) => databases))) await deleteDatabase(name);
}

/** An SDK call's HTTP status (200 when it resolves; the error's message when it has no status). */
export const statusOf = (call: Promise<unknown>): Promise<number | string | undefined> =>
  call.then(
    () => 200,
    (e: { status?: number; message?: string }) => e.status ?? e.message,
  );
