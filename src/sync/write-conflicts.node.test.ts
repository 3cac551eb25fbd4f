/**
 * Two devices that wrote the same regular write slot (`task_id`, `idx`) of
 * one checkpoint with different values while apart (both resumed the same
 * failed step: an encrypted saver's bytes differ even for equal values, a
 * model's answer differs outright) end with the same value: the server's,
 * the first it took. Found by the convergence run with a Chromium device
 * (seed 7 at the full depth, encrypted): the device kept its own value, so
 * it never matched the server and pushed the checkpoint again every round.
 */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { closeDevices, device, newUser, serverForFile } from "../../test/support/sync/harness.js";

const served = serverForFile();

const config = (id?: string) => ({
  configurable: { thread_id: "t", checkpoint_ns: "", ...(id ? { checkpoint_id: id } : {}) },
});

/** Two devices of a new user, both holding one checkpoint A put and synced. */
async function bothHoldOneCheckpoint(user: string) {
  const { token } = newUser(user);
  const a = device(served.url, token);
  const b = device(served.url, token);
  const id = uuid6(-1);
  await a.saver.put(config(), { ...emptyCheckpoint(), id }, { source: "loop", step: 0, parents: {} }, {});
  await a.sync.syncNow();
  await b.sync.syncNow();
  return { a, b, id };
}

describe("a regular write slot two devices filled apart", () => {
  it("ends with the server's value on both, and no push goes again", async () => {
    const { a, b, id } = await bothHoldOneCheckpoint("write-conflict");
    await a.saver.putWrites(config(id), [["log", "from A"]], "task-1");
    await b.saver.putWrites(config(id), [["log", "from B"]], "task-1");
    await a.sync.syncNow();
    await b.sync.syncNow();
    await a.sync.syncNow();

    const writes = async (d: typeof a) => (await d.saver.getTuple(config(id)))?.pendingWrites;
    expect(await writes(a)).toEqual([["task-1", "log", "from A"]]);
    expect(await writes(b)).toEqual([["task-1", "log", "from A"]]);
    // Nothing left to push: B's fingerprint matches what the server holds.
    expect((await b.sync.syncNow()).pushed).toBe(0);
    expect((await a.sync.syncNow()).pushed).toBe(0);
    await closeDevices(a, b);
  });

  it("ends with the server's value on a device whose push of that slot also changed the checkpoint", async () => {
    // Convergence seed 385 at 40 operations: B's push carried its own value of the slot, which the server
    // refused (it holds A's), and a special write the server took. That made the checkpoint B's own push
    // (a new sequence number, B its origin), and pulls skip a device's own pushes: B kept its value.
    const { a, b, id } = await bothHoldOneCheckpoint("write-conflict-special");
    await a.saver.putWrites(config(id), [["log", "from A"]], "task-1");
    await a.sync.syncNow();
    await b.saver.putWrites(config(id), [["log", "from B"]], "task-1");
    await b.saver.putWrites(config(id), [["__error__", "failed on B"]], "task-2");
    await b.sync.syncNow();
    await a.sync.syncNow();

    const writes = async (d: typeof a) =>
      (await d.saver.getTuple(config(id)))?.pendingWrites?.filter(([, channel]) => channel === "log");
    expect(await writes(b)).toEqual([["task-1", "log", "from A"]]);
    expect(await writes(a)).toEqual([["task-1", "log", "from A"]]);
    expect((await b.sync.syncNow()).pushed).toBe(0);
    expect((await a.sync.syncNow()).pushed).toBe(0);
    await closeDevices(a, b);
  });
});
