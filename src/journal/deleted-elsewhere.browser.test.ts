/**
 * Another tab deletes the database (`deleteSaverDatabase`, as the Playwright
 * kit's `clearThreads({ deleteDatabase })` does) while a saver with the OPFS
 * journal is open here: the journal, which that tab cannot remove while this
 * saver holds it, must not bring the deleted threads back at the next open.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { deleteSaverDatabase } from "../saver/delete-database.js";
import { freshDbName } from "../../test/support/databases.js";
import { openIframeTab, type IframeTab } from "../../test/support/iframe-tab.js";
import type { FreshTabApi } from "../../test/support/fresh/fresh-page.js";

const PAGE_MODULE = new URL("../../test/support/fresh/fresh-page.ts", import.meta.url).href;

const State = Annotation.Root({ count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) });
function tickGraph(saver: IndexedDBSaver, steps: number) {
  return new StateGraph(State)
    .addNode("tick", () => ({ count: 1 }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state: typeof State.State) => (state.count < steps ? "tick" : END))
    .compile({ checkpointer: saver });
}
const config = (threadId: string): RunnableConfig => ({ configurable: { thread_id: threadId } });

let tab: IframeTab<FreshTabApi>;
beforeAll(async () => {
  tab = await openIframeTab<FreshTabApi>(PAGE_MODULE, "freshTab");
}, 60_000);
afterAll(async () => {
  await tab.api.close();
  tab.frame.remove();
});

describe("the database deleted by another tab while a journaling saver is open", () => {
  it("the saver closed without another call: its next open restores nothing", async () => {
    const dbName = freshDbName("deleted-elsewhere");
    const app = new IndexedDBSaver({ dbName, journal: "opfs" });
    await tickGraph(app, 3).invoke({ count: 0 }, config("t"));
    await tab.api.deleteDatabase(dbName);
    await app.close(); // the page reloads
    const reloaded = new IndexedDBSaver({ dbName, journal: "opfs" });
    // Before: { kind: "restored", recoveredWrites: 5 } and the deleted thread back.
    expect(await reloaded.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(await reloaded.getTuple(config("t"))).toBeUndefined();
    await reloaded.close();
    await deleteSaverDatabase(dbName);
  });

  it("the saver used again: it writes to a new database, and its next open has only what it wrote since", async () => {
    const dbName = freshDbName("deleted-elsewhere");
    const app = new IndexedDBSaver({ dbName, journal: "opfs" });
    await tickGraph(app, 3).invoke({ count: 0 }, config("t"));
    await tab.api.deleteDatabase(dbName);
    expect(await app.getTuple(config("t")), "read by the open saver").toBeUndefined();
    await tickGraph(app, 2).invoke({ count: 0 }, config("u"));
    await app.close();
    const reloaded = new IndexedDBSaver({ dbName, journal: "opfs" });
    expect(await reloaded.recovery()).toMatchObject({ kind: "ok", recoveredWrites: 0 });
    expect(await reloaded.getTuple(config("t")), "read after the reload").toBeUndefined();
    expect((await reloaded.getTuple(config("u")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    await reloaded.close();
    // And a wipe of the new database restores what was written since the delete, and only that.
    await new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(dbName);
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });
    const restored = new IndexedDBSaver({ dbName, journal: "opfs" });
    expect(await restored.recovery()).toMatchObject({ kind: "restored" });
    expect(await restored.getTuple(config("t")), "read after a wipe").toBeUndefined();
    expect((await restored.getTuple(config("u")))?.checkpoint.channel_values).toMatchObject({ count: 2 });
    await restored.close();
    await deleteSaverDatabase(dbName);
  });
});
