/**
 * Change notices between real browsing contexts (events.ts): a same-origin
 * iframe (its own document, realm and BroadcastChannel endpoint, as another
 * tab) writes through its saver; this page's saver must hear of every change,
 * in order, including a put made just before the iframe's page unloads, and
 * one made by a dedicated worker terminated as soon as its put resolved.
 */
import { afterAll, describe, expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import type { CheckpointChange } from "./events.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";
import { openIframeTab, type IframeTab } from "../../test/support/iframe-tab.js";
import type { NoticesTabApi } from "../../test/support/notices-page.js";

const PAGE_MODULE = new URL("../../test/support/notices-page.ts", import.meta.url).href;
const track = trackSavers<IndexedDBSaver>();
const tabs: IframeTab<NoticesTabApi>[] = [];
afterAll(() => tabs.forEach((tab) => tab.frame.remove()));

/** A listening saver of this page on a new database, with the other tabs' changes it hears, as `kind thread checkpoint`. */
function listening(): { dbName: string; heard: string[] } {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("notices-tabs") }));
  const heard: string[] = [];
  saver.subscribe((change: CheckpointChange) => {
    if (change.remote) heard.push(`${change.kind} ${change.threadId} ${String(change.checkpointId)}`);
  });
  return { dbName: saver.dbName, heard };
}

/** Waits until `heard` holds `count` changes, or five seconds pass. */
async function until(heard: string[], count: number): Promise<string[]> {
  const deadline = Date.now() + 5000;
  while (heard.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return heard;
}

async function openTab(): Promise<IframeTab<NoticesTabApi>> {
  const tab = await openIframeTab<NoticesTabApi>(PAGE_MODULE, "noticesTab");
  tabs.push(tab);
  return tab;
}

describe("another tab's change notices", () => {
  it("arrive here one per change, in the order made, puts and a delete between them", async () => {
    const tab = await openTab();
    const { dbName, heard } = listening();
    const made = await tab.api.writeSequence(dbName);
    expect(made).toHaveLength(6);
    expect(await until(heard, made.length)).toEqual(made);
  }, 30_000);

  it("arrive when the tab's page unloads right after its put resolves", async () => {
    const tab = await openTab();
    const { dbName, heard } = listening();
    let id: string | undefined;
    void tab.api.putThenLeave(dbName, (made) => (id = made));
    expect(await until(heard, 1)).toEqual([`put t ${id}`]);
    expect(tab.frame.isConnected).toBe(false);
  }, 30_000);

  it("arrive from a dedicated worker terminated as soon as its put resolves", async () => {
    const { dbName, heard } = listening();
    const worker = new Worker(new URL("../../test/support/notices-worker.ts", import.meta.url), { type: "module" });
    const id = await new Promise<string>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<string>) => {
        worker.terminate();
        resolve(event.data);
      };
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage({ dbName });
    });
    expect(await until(heard, 1)).toEqual([`put t ${id}`]);
  }, 30_000);
});
