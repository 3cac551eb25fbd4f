/**
 * A "tab" for `src/saver/notices-tabs.browser.test.ts`: loaded as a module
 * script into a same-origin iframe (its own document, realm and
 * BroadcastChannel endpoints, as another tab), it writes through a saver of
 * its own so the test page can check the change notices it receives.
 */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { saverFor } from "./iframe-page.js";

/** Puts a checkpoint on top of `parentId` (none: the first) in `threadId`; resolves with its id. */
async function put(dbName: string, threadId: string, parentId: string | undefined, step: number): Promise<string> {
  const id = uuid6(0);
  const checkpoint = { ...emptyCheckpoint(), id, channel_values: { a: step }, channel_versions: { a: step } };
  const config = { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: parentId } };
  await saverFor(dbName).put(config, checkpoint, { source: "loop", step, parents: {} }, { a: step });
  return id;
}

const api = {
  /**
   * Three puts to thread "t", its delete, then two puts to thread "u", each
   * awaited as a graph awaits its puts; resolves with the changes made, as
   * `kind thread checkpoint` (the delete names no checkpoint).
   */
  async writeSequence(dbName: string): Promise<string[]> {
    const made: string[] = [];
    let parent: string | undefined;
    for (const step of [1, 2, 3]) made.push(`put t ${(parent = await put(dbName, "t", parent, step))}`);
    await saverFor(dbName).deleteThread("t");
    made.push("delete t undefined");
    parent = undefined;
    for (const step of [1, 2]) made.push(`put u ${(parent = await put(dbName, "u", parent, step))}`);
    return made;
  },
  /** Puts to thread "t", then removes this tab's frame (its page unloads) as soon as the put resolves; reports the id first. */
  async putThenLeave(dbName: string, report: (id: string) => void): Promise<void> {
    const id = await put(dbName, "t", undefined, 1);
    report(id);
    window.frameElement?.remove();
  },
};

/** What the test sees on this frame's window. */
export type NoticesTabApi = typeof api;
(window as unknown as { noticesTab: NoticesTabApi }).noticesTab = api;
