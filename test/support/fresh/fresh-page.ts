/**
 * A "tab" for `src/saver/fresh-tabs.browser.test.ts`: loaded as a module
 * script into a same-origin iframe (its own document, realm, IndexedDB
 * connection and Web Locks client), it writes to a saver's database on
 * request, as another tab of the app would.
 */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { pageSavers, saverFor } from "../iframe-page.js";
import { deleteSaverDatabase } from "../../../src/saver/delete-database.js";

const api = {
  /** Puts a checkpoint with `a: value` (at version `version`) on top of `parentId` in thread "t"; resolves with its id. */
  async put(dbName: string, parentId: string, value: string, version: number): Promise<string> {
    const id = uuid6(0);
    const checkpoint = { ...emptyCheckpoint(), id, channel_values: { a: value }, channel_versions: { a: version } };
    const config = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: parentId } };
    await saverFor(dbName).put(config, checkpoint, { source: "loop", step: 1, parents: {} }, { a: version });
    return id;
  },
  /** Adds a pending write `["a", value]` of task "tab-task" to checkpoint `id` of thread "t". */
  async putWrites(dbName: string, id: string, value: string): Promise<void> {
    const config = { configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: id } };
    await saverFor(dbName).putWrites(config, [["a", value]], "tab-task");
  },
  /** Deletes thread "t". */
  async deleteThread(dbName: string): Promise<void> {
    await saverFor(dbName).deleteThread("t");
  },
  /** `deleteSaverDatabase(dbName)`, as another tab's "clear data" would; resolves with what it removed, or the error's name and message. */
  async deleteDatabase(dbName: string): Promise<{ marker: boolean; journalFiles: number } | { error: string }> {
    return deleteSaverDatabase(dbName, { blockedTimeoutMs: 2000 }).catch((error: unknown) => ({
      error: `${(error as Error).name}: ${(error as Error).message}`,
    }));
  },
  /** Closes every saver of the tab. */
  async close(): Promise<void> {
    await Promise.all([...pageSavers.values()].map((saver) => saver.close()));
  },
};

/** What the test sees on this frame's window. */
export type FreshTabApi = typeof api;
(window as unknown as { freshTab: FreshTabApi }).freshTab = api;
