// The chat app of the bundle-size check (size-limits.json, scripts/check-size.mjs):
// what a chat page calls before its first answer is shown. It opens the saver,
// reads the thread (getTuple), runs one graph step's writes (put, putWrites, put)
// and lists the thread's history (list). Run by scripts/app-bundle.mjs's runApp
// on the built app, which records the chunks these calls load.
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";

/** A thread's config, the root namespace. */
export const THREAD = { configurable: { thread_id: "chat", checkpoint_ns: "" } };

/** One turn's writes, as a graph makes them: the input checkpoint, the step's pending write, the next checkpoint. */
export async function writeTurn(saver) {
  const first = { ...emptyCheckpoint(), id: uuid6(-1), channel_versions: { messages: 1 } };
  first.channel_values = { messages: [{ role: "user", content: "hello" }] };
  const written = await saver.put(THREAD, first, { source: "input", step: -1, parents: {} }, { messages: 1 });
  await saver.putWrites(written, [["messages", [{ role: "assistant", content: "hi" }]]], "task-1");
  const second = { ...first, id: uuid6(0), channel_versions: { messages: 2 } };
  return saver.put(written, second, { source: "loop", step: 0, parents: {} }, { messages: 2 });
}

/** @param {{ IndexedDBSaver: typeof import("../src/index.ts").IndexedDBSaver }} app */
export default async function chat({ IndexedDBSaver }) {
  const saver = new IndexedDBSaver({ dbName: "size-chat" });
  await saver.getTuple(THREAD);
  await writeTurn(saver);
  await saver.getTuple(THREAD);
  for await (const tuple of saver.list(THREAD, { limit: 10 })) void tuple;
  await saver.close();
}
