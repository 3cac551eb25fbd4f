/**
 * The Agent Server the app talks to, and an SDK `Client` whose `fetch` is
 * the server's, so no request leaves the page: served from this page, or
 * (`?server=worker`, `?server=shared`) from a dedicated or shared worker
 * through `connectLocalAgentServer`. The README's `useStream` lines are taken
 * from here, agent.ts and App.tsx (use-stream.e2e.test.ts checks that they still are).
 */
import { Client } from "@langchain/langgraph-sdk";
import { connectLocalAgentServer } from "langgraph-checkpoint-indexeddb/agent-server";
import { openServer } from "./agent.js";

const params = new URLSearchParams(location.search);
/** Milliseconds between two streamed characters: `?pace=` in the address, else 20. */
const paceMs = Number(params.get("pace") ?? 20);
/** Where the server runs: this page (default), a dedicated worker, or a shared worker. */
export const serverMode = params.get("server") ?? "page";

function openInWorker() {
  const name = `use-stream-example pace=${paceMs}`;
  if (serverMode === "shared") {
    return connectLocalAgentServer(
      new SharedWorker(new URL("./worker.ts", import.meta.url), { type: "module", name }).port,
    );
  }
  return connectLocalAgentServer(new Worker(new URL("./worker.ts", import.meta.url), { type: "module", name }));
}

const server = serverMode === "page" ? await openServer(paceMs) : openInWorker();
/** The SDK client on the server. */
export const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch } });
