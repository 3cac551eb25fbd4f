/**
 * A dedicated worker for `src/runs/runs.browser.test.ts`: sends one message
 * through runOnThread per request (navigator.locks and BroadcastChannel of
 * the worker, shared with the page's origin) and answers with the Outcome.
 */
import { IndexedDBSaver } from "../../../src/saver/index.js";
import type { MultitaskStrategy } from "../../../src/runs/index.js";
import { send } from "./scenario.js";

interface Request {
  id: number;
  /** Only open the database and answer: a warm-up, so that later sends start at once. */
  ping?: boolean;
  dbName: string;
  threadId: string;
  text: string;
  strategy: MultitaskStrategy;
  delayMs: number;
  /** One of two sends at once: see `send` in scenario.ts. */
  answerAfterStop?: boolean;
}

const savers = new Map<string, IndexedDBSaver>();

self.onmessage = async (event: MessageEvent<Request>) => {
  const { id, dbName, threadId, text, strategy, delayMs, answerAfterStop } = event.data;
  let saver = savers.get(dbName);
  if (!saver) savers.set(dbName, (saver = new IndexedDBSaver({ dbName })));
  if (event.data.ping) {
    await saver.getTuple({ configurable: { thread_id: threadId } });
    self.postMessage({ id });
    return;
  }
  self.postMessage({
    id,
    outcome: await send(saver, threadId, text, strategy, delayMs, false, answerAfterStop),
    hasLocks: "locks" in navigator,
  });
};
