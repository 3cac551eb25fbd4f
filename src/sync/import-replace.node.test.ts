/**
 * `importThread` with `ifExists: "replace"` on a synced device: the thread
 * it replaced is replaced on the server and on every other device too, not
 * merged with the imported one (src/saver/replace-marks.ts).
 */
import { describe, expect, it } from "vitest";
import { chat } from "../../test/support/chat-graph.js";
import { checkpointIds, device, newUser, serverForFile, state } from "../../test/support/sync/harness.js";
import { importThread } from "../portable/index.js";

const served = serverForFile();

describe("an import replacing a synced thread", () => {
  it("replaces it on the server and on the other device, for a new device too", async () => {
    const { token } = newUser();
    const a = device(served.url, token);
    const b = device(served.url, token);
    await chat(a.saver, "t", ["one", "two", "three"]);
    await a.sync.syncNow();
    await b.sync.syncNow();
    await chat(a.saver, "other", ["four"]);
    const file = await a.saver.exportThread("other", { as: "bytes" });
    await importThread(a.saver, file, { targetThreadId: "t", ifExists: "replace" });
    const imported = await checkpointIds(a.saver, "t");
    await a.sync.syncNow();
    await b.sync.syncNow();
    // Before: the server and B kept the replaced checkpoints beside the imported ones (no removal was sent).
    expect(await checkpointIds(b.saver, "t")).toEqual(imported);
    expect(await state(b.saver, "t")).toEqual(await state(a.saver, "t"));
    const c = device(served.url, token);
    await c.sync.syncNow();
    expect(await checkpointIds(c.saver, "t")).toEqual(imported);
    // The replaced checkpoints' removals go once; the imported thread syncs on as usual.
    expect(await a.sync.syncNow()).toMatchObject({ pushed: 0, pushedDeletes: 0 });
    await chat(b.saver, "t", ["five"]);
    await b.sync.syncNow();
    await a.sync.syncNow();
    expect(await checkpointIds(a.saver, "t")).toEqual(await checkpointIds(b.saver, "t"));
  });
});
