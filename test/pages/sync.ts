/**
 * One device of the two-browser sync test (src/sync/chromium.node.test.ts):
 * the app's IndexedDBSaver and a SyncClient to the sync server, reached
 * through the page's own origin (the preview server proxies `/v1`). The test
 * drives it through `window.device`.
 */
import { IndexedDBSaver } from "../../src/index.js";
import { SyncClient, type SyncStatus } from "../../src/sync.js";
import { chat, chatGraph, plain } from "../support/chat-graph.js";

const query = new URLSearchParams(location.search);
const saver = new IndexedDBSaver({ dbName: "app" });
const sync = new SyncClient({
  saver,
  url: location.origin,
  token: query.get("token") ?? "",
  minBackoffMs: 50,
  maxBackoffMs: 200,
  timeoutMs: 3000,
});
const statuses: SyncStatus[] = [];
sync.subscribe((status) => statuses.push(status));
const changes: string[] = [];
saver.subscribe((change) => changes.push(`${change.kind}:${change.threadId}:${change.remote}`));

const device = {
  chat: (threadId: string, text: string) => chat(saver, threadId, [text]),
  async sync() {
    try {
      return { ok: true, result: await sync.syncNow() };
    } catch (error) {
      return { ok: false, code: (error as { code?: string }).code, message: (error as Error).message };
    }
  },
  async state(threadId: string) {
    const snapshot = await chatGraph(saver).getState({ configurable: { thread_id: threadId } });
    return {
      messages: plain(snapshot.values.messages),
      checkpointId: snapshot.config.configurable?.checkpoint_id as string | undefined,
    };
  },
  async ids(threadId: string) {
    const ids: string[] = [];
    for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) ids.push(tuple.checkpoint.id);
    return ids.sort();
  },
  deleteThread: (threadId: string) => saver.deleteThread(threadId),
  statuses: () => statuses.map((s) => ({ state: s.state, pending: s.pending, remote: s.remote })),
  changes: () => [...changes],
};
(window as unknown as { device: typeof device }).device = device;
document.title = "ready";
