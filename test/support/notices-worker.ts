/**
 * A dedicated worker for `src/saver/notices-tabs.browser.test.ts`: it puts
 * one checkpoint through a saver of its own and answers with its id as soon
 * as the put resolves, so the test page can terminate it at once, as an app
 * does with a worker whose run ended. A worker has no page to watch: no
 * `pagehide` or `freeze` tells it that it is about to go.
 */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { IndexedDBSaver } from "../../src/saver/index.js";

self.onmessage = async (event: MessageEvent<{ dbName: string }>) => {
  const saver = new IndexedDBSaver({ dbName: event.data.dbName });
  const id = uuid6(0);
  const checkpoint = { ...emptyCheckpoint(), id, channel_values: { a: 1 }, channel_versions: { a: 1 } };
  const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
  await saver.put(config, checkpoint, { source: "loop", step: 1, parents: {} }, { a: 1 });
  self.postMessage(id);
};
