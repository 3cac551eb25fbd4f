/**
 * Special writes (the slots that replace, such as `__error__` and
 * `__interrupt__`) through the sync server: a device that pushes a
 * checkpoint again for another reason (a regular write added) does not put
 * back an older value it once pulled over the newer one another device put
 * in that slot since.
 */
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { device, newUser, serverForFile } from "../../test/support/sync/harness.js";
import type { IndexedDBSaver } from "../saver/index.js";

const served = serverForFile();

const config = (id?: string) => ({
  configurable: { thread_id: "t", checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) },
});

/** The pending writes of checkpoint `id` as `task/channel=value`, sorted. */
async function writesOf(saver: IndexedDBSaver, id: string): Promise<string[]> {
  const tuple = await saver.getTuple(config(id));
  return (tuple?.pendingWrites ?? []).map(([task, channel, value]) => `${task}/${channel}=${String(value)}`).sort();
}

describe("special writes through sync", () => {
  it("a device re-pushing a checkpoint does not revert a slot another device replaced", async () => {
    const { token } = newUser("special");
    const a = device(served.url, token);
    const b = device(served.url, token);
    const id = uuid6(-1);
    const checkpoint: Checkpoint = { ...emptyCheckpoint(), id };
    await a.saver.put(config(), checkpoint, { source: "loop", step: 0, parents: {} }, {});
    await a.saver.putWrites(config(id), [["__error__", "first failure"]], "tool");
    await a.sync.syncNow();
    await b.sync.syncNow(); // B holds the first value

    await a.saver.putWrites(config(id), [["__error__", "second failure"]], "tool"); // replaces
    await a.sync.syncNow();
    await b.saver.putWrites(config(id), [["log", "from b"]], "other"); // B pushes the checkpoint again
    await b.sync.syncNow();
    await a.sync.syncNow();

    const expected = ["other/log=from b", "tool/__error__=second failure"];
    const c = device(served.url, token);
    await c.sync.syncNow();
    expect(await writesOf(c.saver, id)).toEqual(expected);
    expect(await writesOf(a.saver, id)).toEqual(expected);
    expect(await writesOf(b.saver, id)).toEqual(expected);
    for (const d of [a, b, c]) {
      d.sync.close();
      await d.saver.close();
    }
  });
});
