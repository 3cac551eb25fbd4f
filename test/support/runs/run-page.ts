/**
 * A "tab" for `src/runs/runs.browser.test.ts`: loaded as a module script into
 * a same-origin iframe (its own document, realm, IndexedDB connections and
 * Web Locks client), it sends messages through runOnThread on request.
 * Results cross the realm boundary as JSON.
 */
import { IndexedDBSaver, runOnThread, type MultitaskStrategy } from "../../../src/index.js";
import { send, slowChatGraph } from "./scenario.js";

// Vitest's browser mode rewrites import() into __vitest_browser_runner__.wrapDynamicImport(...)
// in the modules it serves. This frame is a page of our own with no runner in it; give it the
// same pass-through that Vitest gives workers, or the saver's on-demand modules cannot load.
(globalThis as { __vitest_browser_runner__?: unknown }).__vitest_browser_runner__ ??= {
  wrapDynamicImport: (load: () => unknown) => load(),
};

const savers = new Map<string, IndexedDBSaver>();
function saverFor(dbName: string): IndexedDBSaver {
  let saver = savers.get(dbName);
  if (!saver) savers.set(dbName, (saver = new IndexedDBSaver({ dbName })));
  return saver;
}

const api = {
  /** Sends one message with runOnThread; resolves with the Outcome as JSON. */
  async send(
    dbName: string,
    threadId: string,
    text: string,
    strategy: MultitaskStrategy,
    delayMs: number,
  ): Promise<string> {
    return JSON.stringify(await send(saverFor(dbName), threadId, text, strategy, delayMs));
  },
  /** Resumes a cut-off run (null input) through runOnThread. */
  async resume(dbName: string, threadId: string): Promise<string> {
    try {
      await runOnThread(slowChatGraph(saverFor(dbName)), null, { configurable: { thread_id: threadId, delay_ms: 0 } });
      return JSON.stringify({ ok: true });
    } catch (error) {
      return JSON.stringify({ ok: false, error: `${(error as Error)?.name}: ${(error as Error)?.message}` });
    }
  },
};

export type RunsTabApi = typeof api;
(window as Window & { runsTab?: RunsTabApi }).runsTab = api;
