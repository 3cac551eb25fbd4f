/**
 * The Agent Server the app talks to, served from this page: the example's
 * graph on IndexedDB (checkpoints, long-term memory, thread and run records),
 * and an SDK `Client` whose `fetch` is the server's, so no request leaves the
 * page. The README's `useStream` lines are taken from here and from App.tsx
 * (use-stream.e2e.test.ts checks that they still are).
 */
import { Client } from "@langchain/langgraph-sdk";
import { IndexedDBSaver } from "langgraph-checkpoint-indexeddb";
import { IndexedDBStore } from "langgraph-checkpoint-indexeddb/store";
import { createLocalAgentServer } from "langgraph-checkpoint-indexeddb/agent-server";
import { chatGraph } from "./graph.js";

/** Milliseconds between two streamed characters: `?pace=` in the address, else 20. */
const paceMs = Number(new URLSearchParams(location.search).get("pace") ?? 20);

const graph = chatGraph(paceMs);
const saver = new IndexedDBSaver({ dbName: "use-stream-example" });
const store = new IndexedDBStore({ dbName: "use-stream-example-store" });
const server = await createLocalAgentServer({ graphs: { agent: graph }, saver, store });
/** The SDK client on the in-page server. */
export const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch } });
