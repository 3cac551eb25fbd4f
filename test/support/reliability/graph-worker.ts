/**
 * A dedicated worker for `test/suites/worker.browser.test.ts`: runs the chat graph of
 * test/support/chat-graph.ts (from `@langchain/langgraph/web`) on an IndexedDBSaver
 * inside the worker, one message per request, and answers with the
 * resulting messages. Errors come back as data.
 */
import { IndexedDBSaver } from "../../../src/index.js";
import { chat } from "../chat-graph.js";

interface Request {
  id: number;
  dbName: string;
  threadId: string;
  turns: string[];
  delta?: boolean;
}

const savers = new Map<string, IndexedDBSaver>();

self.onmessage = async (event: MessageEvent<Request>) => {
  const { id, dbName, threadId, turns, delta } = event.data;
  try {
    let saver = savers.get(dbName);
    if (!saver) savers.set(dbName, (saver = new IndexedDBSaver({ dbName })));
    const started = performance.now();
    const messages = await chat(saver, threadId, turns, delta);
    let checkpoints = 0;
    for await (const _ of saver.list({ configurable: { thread_id: threadId } })) checkpoints += 1;
    self.postMessage({
      id,
      ok: true,
      messages,
      checkpoints,
      ms: performance.now() - started,
      hasWindow: typeof window !== "undefined",
    });
  } catch (error) {
    self.postMessage({ id, ok: false, error: `${(error as Error)?.name}: ${(error as Error)?.message}` });
  }
};
