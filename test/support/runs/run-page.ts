/**
 * A "tab" for `src/runs/runs.browser.test.ts`: loaded as a module script into
 * a same-origin iframe (its own document, realm, IndexedDB connections and
 * Web Locks client), it sends messages through runOnThread on request.
 * Results cross the realm boundary as JSON.
 */
import { runOnThread, type MultitaskStrategy } from "../../../src/runs/index.js";
import { saverFor } from "../iframe-page.js";
import { send, slowChatGraph } from "./scenario.js";

const api = {
  /** Sends one message with runOnThread (`answerAfterStop`: see `send`); resolves with the Outcome as JSON. */
  async send(
    dbName: string,
    threadId: string,
    text: string,
    strategy: MultitaskStrategy,
    delayMs: number,
    answerAfterStop = false,
  ): Promise<string> {
    return JSON.stringify(await send(saverFor(dbName), threadId, text, strategy, delayMs, false, answerAfterStop));
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
