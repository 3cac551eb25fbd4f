/**
 * A "tab" for `src/agent-server/shared-worker.browser.test.ts`: loaded as a
 * module script into a same-origin iframe (its own document and Web Locks
 * client), it connects to the tests' shared worker and streams a run as
 * `useStream` does without resumable streams (`on_disconnect: "cancel"`).
 * Removing the iframe is the tab closing mid-run.
 */
import { Client } from "@langchain/langgraph-sdk";
import { connectLocalAgentServer } from "../../../src/agent-server/index.js";

// Vitest's browser mode rewrites import() in the modules it serves; this frame has no runner (see runs/run-page.ts).
(globalThis as { __vitest_browser_runner__?: unknown }).__vitest_browser_runner__ ??= {
  wrapDynamicImport: (load: () => unknown) => load(),
};

const url = new URL("./server-shared-worker.ts", import.meta.url);

const api = {
  /**
   * Streams a run of `text` on `threadId` through the shared worker named `name`, asked to stop if
   * the client leaves; resolves once it is created.
   */
  stream(name: string, threadId: string, text: string, delayMs: number): Promise<string> {
    const worker = new SharedWorker(url, { type: "module", name });
    const client = new Client({
      apiUrl: "http://local.invalid",
      callerOptions: { fetch: connectLocalAgentServer(worker.port).fetch, maxRetries: 0 },
    });
    return new Promise((resolve, reject) => {
      void (async () => {
        for await (const part of client.runs.stream(threadId, "agent", {
          input: { messages: [{ type: "human", content: text }] },
          config: { configurable: { delay_ms: delayMs } },
          onDisconnect: "cancel",
          onRunCreated: (meta) => resolve(meta.run_id),
        }))
          void part;
      })().catch(reject);
    });
  },
};

/** What the tab publishes on its window. */
export type SharedTabApi = typeof api;
(window as unknown as { sharedTab: SharedTabApi }).sharedTab = api;
