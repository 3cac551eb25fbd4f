/**
 * The example's Agent Server itself: the chat graph on IndexedDB
 * (checkpoints, long-term memory, thread and run records). The page opens
 * it (server.ts), or a dedicated or shared worker does (worker.ts).
 */
import { IndexedDBSaver } from "langgraph-checkpoint-indexeddb";
import { IndexedDBStore } from "langgraph-checkpoint-indexeddb/store";
import { createLocalAgentServer } from "langgraph-checkpoint-indexeddb/agent-server";
import { chatGraph } from "./graph.js";

/** Opens the server, its graph streaming a character every `paceMs` milliseconds. */
export async function openServer(paceMs: number) {
  const graph = chatGraph(paceMs);
  const saver = new IndexedDBSaver({ dbName: "use-stream-example" });
  const store = new IndexedDBStore({ dbName: "use-stream-example-store" });
  const server = await createLocalAgentServer({ graphs: { agent: graph }, saver, store });
  return server;
}
