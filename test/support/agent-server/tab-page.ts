/**
 * A "tab" for `src/agent-server/join.browser.test.ts`: loaded as a module
 * script into a same-origin iframe (its own document, realm and Web Locks
 * client), it serves a local agent server on a database the test names and
 * starts runs there. Removing the iframe is a tab closing mid-run.
 */
import { Client } from "@langchain/langgraph-sdk";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { createLocalAgentServer } from "../../../src/agent-server/index.js";
import { agentGraph } from "./graph.js";

// Vitest's browser mode rewrites import() in the modules it serves; this frame has no runner (see runs/run-page.ts).
(globalThis as { __vitest_browser_runner__?: unknown }).__vitest_browser_runner__ ??= {
  wrapDynamicImport: (load: () => unknown) => load(),
};

const api = {
  /** Starts a run of `text` on a new thread of `dbName`, in the background; resolves with its ids. */
  async start(dbName: string, text: string, delayMs: number): Promise<{ threadId: string; runId: string }> {
    const saver = new IndexedDBSaver({ dbName });
    const server = await createLocalAgentServer({ graphs: { agent: agentGraph() }, saver });
    const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch } });
    const { thread_id: threadId } = await client.threads.create();
    const run = await client.runs.create(threadId, "agent", {
      input: { messages: [{ type: "human", content: text }] },
      config: { configurable: { delay_ms: delayMs } },
      streamMode: ["values", "messages-tuple"],
    });
    return { threadId, runId: run.run_id };
  },
};

/** What the tab publishes on its window. */
export type AgentTabApi = typeof api;
(window as unknown as { agentTab: AgentTabApi }).agentTab = api;
