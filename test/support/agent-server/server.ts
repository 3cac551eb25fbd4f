/**
 * A local agent server for a test, serving `agentGraph()` on a fresh saver
 * database, with an SDK `Client` on its `fetch`. `closeServers()` (in an
 * `afterEach`/`afterAll`) closes every one opened and deletes its databases.
 */
import { Client } from "@langchain/langgraph-sdk";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { IndexedDBStore } from "../../../src/store/index.js";
import { createLocalAgentServer, type LocalAgentServer } from "../../../src/agent-server/index.js";
import type { RunLockManager } from "../../../src/runs/locks.js";
import { deleteDatabase, freshDbName } from "../databases.js";
import { agentGraph } from "./graph.js";

const cleanups: (() => Promise<void>)[] = [];

/** Where a second server goes: the database of another (a second tab), and its lock manager. */
export interface ServerPlace {
  dbName?: string;
  locks?: RunLockManager;
}

/**
 * Opens a server (with an IndexedDBStore when `withStore`), and a Client on
 * it: on a fresh database, or on `place.dbName` (another tab's).
 */
export async function openServer<State extends Record<string, unknown> = Record<string, unknown>>(
  prefix: string,
  withStore = false,
  place: ServerPlace = {},
): Promise<{ server: LocalAgentServer; saver: IndexedDBSaver; client: Client<State> }> {
  const dbName = place.dbName ?? freshDbName(prefix);
  const saver = new IndexedDBSaver({ dbName });
  const store = withStore ? new IndexedDBStore({ dbName: `${dbName}-store` }) : undefined;
  const server = await createLocalAgentServer({
    graphs: { agent: agentGraph() },
    saver,
    store,
    locks: place.locks,
  });
  cleanups.push(async () => {
    await server.close();
    await saver.close();
    await store?.close();
    for (const name of [dbName, `${dbName}-agent-threads`, `${dbName}-store`]) await deleteDatabase(name);
  });
  const client = new Client<State>({
    apiUrl: "http://local.invalid",
    callerOptions: { fetch: server.fetch, maxRetries: 0 },
  });
  return { server, saver, client };
}

/** Closes every server `openServer` opened, and deletes their databases. */
export async function closeServers(): Promise<void> {
  for (const cleanup of cleanups.splice(0)) await cleanup();
}
