/**
 * Attacks on the clear structural fields of an encrypted saver's rows (issue
 * 11, item 2): a write's channel and task path, a checkpoint's parent link,
 * clear channel versions and run id. Each test edits one field with raw
 * IndexedDB, as someone who can write the profile's files but holds no key
 * would, and checks that the read or delete it steers fails with a
 * `DecryptionError` naming the thread instead of returning (or deleting)
 * something else. Without encryption nothing is authenticated, so the same
 * edits are not errors there (the last test). Runs on fake-indexeddb in Node
 * and on the real IndexedDB in Chromium.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { DecryptionError } from "../../src/core/errors.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { committed, done, openRaw } from "../support/reliability/raw.js";

const created: string[] = [];
const open: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const each of open.splice(0)) await each.close();
  for (const name of created.splice(0)) await deleteDatabase(name);
});

const KEY = new Uint8Array(32).map((_, i) => i * 7 + 1);
const encrypted = () => EncryptedSerializer.fromRawKey(KEY);
const THREAD = "victim";
const CHANNEL = "messages";

function saverOn(name: string, serde?: SerializerProtocol): IndexedDBSaver {
  const saver = new IndexedDBSaver({ dbName: name, serde });
  open.push(saver);
  return saver;
}

/** Edits rows of `store` in place with raw IndexedDB, the saver closed. */
async function editRows(
  name: string,
  store: "checkpoints" | "writes",
  edit: (rows: Record<string, unknown>[]) => Record<string, unknown>[],
): Promise<void> {
  for (const saver of open.splice(0)) await saver.close();
  const db = await openRaw(name);
  try {
    const tx = db.transaction([store], "readwrite");
    const objects = tx.objectStore(store);
    const rows = (await done(objects.getAll())) as Record<string, unknown>[];
    for (const row of edit(rows)) objects.put(row);
    await committed(tx);
  } finally {
    db.close();
  }
}

/** Checkpoint 3's parent link edited to 1: turn 2 would drop out of its history. */
function relink3To1(name: string): Promise<void> {
  return editRows(name, "checkpoints", (rows) =>
    rows.filter((row) => row.checkpoint_id === "3").map((row) => ({ ...row, parent_checkpoint_id: "1" })),
  );
}

/** An encrypted saver on a delta thread whose checkpoint 3 was relinked to 1. */
async function relinkedSaver(prefix: string): Promise<IndexedDBSaver> {
  const name = freshDbName(prefix);
  created.push(name);
  await deltaThread(saverOn(name, await encrypted()));
  await relink3To1(name);
  return saverOn(name, await encrypted());
}

/** The rejection of `promise` (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as Error,
  );
}

/**
 * A delta-channel thread 1 ← 2 ← 3: checkpoint 1 stores the seed value of
 * `messages`, 2 and 3 only bump its version; each checkpoint has one write
 * to `messages` (the turn that leads to the next) plus a scratchpad write.
 */
async function deltaThread(saver: IndexedDBSaver): Promise<void> {
  let config: RunnableConfig = { configurable: { thread_id: THREAD, checkpoint_ns: "" } };
  for (const id of ["1", "2", "3"]) {
    const version = `v${id}`;
    const checkpoint = {
      ...emptyCheckpoint(),
      id,
      channel_values: id === "1" ? { [CHANNEL]: ["seed"] } : {},
      channel_versions: { [CHANNEL]: version },
    };
    const metadata = { source: "loop", step: Number(id), parents: {} } as CheckpointMetadata;
    config = await saver.put(config, checkpoint, metadata, id === "1" ? { [CHANNEL]: version } : {});
    await saver.putWrites(
      config,
      [
        [CHANNEL, `turn ${id}`],
        ["scratchpad", `secret ${id}`],
      ],
      `task-${id}`,
    );
  }
}

const history = (saver: IndexedDBSaver, checkpointId = "3") =>
  saver.getDeltaChannelHistory({
    config: { configurable: { thread_id: THREAD, checkpoint_ns: "", checkpoint_id: checkpointId } },
    channels: [CHANNEL],
  });

const tuple = (saver: IndexedDBSaver, checkpointId = "3") =>
  saver.getTuple({ configurable: { thread_id: THREAD, checkpoint_ns: "", checkpoint_id: checkpointId } });

describe("an encrypted saver authenticates the clear structural fields (issue 11, item 2)", () => {
  it("reads the untouched thread: seed, every turn in order, pending writes", async () => {
    const name = freshDbName("binding-ok");
    created.push(name);
    const saver = saverOn(name, await encrypted());
    await deltaThread(saver);
    expect((await history(saver))[CHANNEL]).toEqual({ seed: ["seed"], writes: expect.any(Array) });
    expect((await history(saver))[CHANNEL]!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2"]);
    expect((await tuple(saver))!.pendingWrites).toEqual([
      ["task-3", CHANNEL, "turn 3"],
      ["task-3", "scratchpad", "secret 3"],
    ]);
  });

  it("two writes' channels swapped: the scratchpad secret does not replay into messages", async () => {
    const name = freshDbName("binding-swap");
    created.push(name);
    await deltaThread(saverOn(name, await encrypted()));
    await editRows(name, "writes", (rows) => {
      const mine = rows.filter((row) => row.checkpoint_id === "2");
      expect(mine.map((row) => row.channel).sort()).toEqual([CHANNEL, "scratchpad"]);
      return mine.map((row) => ({ ...row, channel: row.channel === CHANNEL ? "scratchpad" : CHANNEL }));
    });
    const saver = saverOn(name, await encrypted());
    const fromHistory = await rejection(history(saver));
    expect(fromHistory).toBeInstanceOf(DecryptionError);
    expect(fromHistory.message).toContain(THREAD);
    expect(await rejection(tuple(saver, "2"))).toBeInstanceOf(DecryptionError);
  });

  it("a write's task path edited: the write does not read (it would reorder pending writes)", async () => {
    const name = freshDbName("binding-path");
    created.push(name);
    await deltaThread(saverOn(name, await encrypted()));
    await editRows(name, "writes", (rows) =>
      rows.filter((row) => row.checkpoint_id === "3").map((row) => ({ ...row, task_path: "~zzz" })),
    );
    expect(await rejection(tuple(saverOn(name, await encrypted())))).toBeInstanceOf(DecryptionError);
  });

  it("a parent link relinked past a checkpoint: no turn silently vanishes from the delta history", async () => {
    const saver = await relinkedSaver("binding-relink");
    const error = await rejection(history(saver));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(error.message).toContain(THREAD);
    expect(await rejection(tuple(saver))).toBeInstanceOf(DecryptionError);
    expect(await rejection(saver.exportThread(THREAD))).toBeInstanceOf(DecryptionError);
  });

  it("an ancestor's clear channel versions edited to pick another seed: the walk refuses it", async () => {
    const name = freshDbName("binding-seed");
    created.push(name);
    await deltaThread(saverOn(name, await encrypted()));
    // Row 2 claims v1 (which has a stored value): the walk would seed at 2 and drop turn 1.
    await editRows(name, "checkpoints", (rows) =>
      rows.filter((row) => row.checkpoint_id === "2").map((row) => ({ ...row, channel_versions: { [CHANNEL]: "v1" } })),
    );
    const saver = saverOn(name, await encrypted());
    const error = await rejection(history(saver));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(error.message).toMatch(/Checkpoint 2 of thread "victim"/);
  });

  it("the kept checkpoint's clear versions emptied: prune does not delete the value it uses", async () => {
    const name = freshDbName("binding-prune");
    created.push(name);
    const saver = saverOn(name, await encrypted());
    let config: RunnableConfig = { configurable: { thread_id: THREAD, checkpoint_ns: "" } };
    for (const id of ["1", "2"]) {
      const checkpoint = {
        ...emptyCheckpoint(),
        id,
        // Too large to sit inline in its row (row format 2): blob rows, which prune deletes.
        channel_values: { state: `value ${id}`.padEnd(4096, ".") },
        channel_versions: { state: `s${id}` },
      };
      config = await saver.put(
        config,
        checkpoint,
        { source: "loop", step: Number(id), parents: {} },
        {
          state: `s${id}`,
        },
      );
    }
    await editRows(name, "checkpoints", (rows) =>
      rows.filter((row) => row.checkpoint_id === "2").map((row) => ({ ...row, channel_versions: {} })),
    );
    const reopened = saverOn(name, await encrypted());
    expect(await rejection(reopened.prune([THREAD]))).toBeInstanceOf(DecryptionError);
    await reopened.close();
    const db = await openRaw(name);
    try {
      const blobs = await done(db.transaction(["blobs"]).objectStore("blobs").getAllKeys());
      expect(blobs.map((key) => (key as string[])[3])).toEqual(["s1", "s2"]);
    } finally {
      db.close();
    }
  });

  it("a clear run id edited: deleteForRuns does not delete another run's thread", async () => {
    const name = freshDbName("binding-run");
    created.push(name);
    const saver = saverOn(name, await encrypted());
    for (const [threadId, runId] of [
      ["doomed", "run-a"],
      ["innocent", "run-b"],
    ] as const) {
      await saver.put(
        { configurable: { thread_id: threadId, checkpoint_ns: "" }, metadata: { run_id: runId } },
        { ...emptyCheckpoint(), id: "1" },
        { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
        {},
      );
    }
    await editRows(name, "checkpoints", (rows) =>
      rows.filter((row) => row.thread_id === "innocent").map((row) => ({ ...row, run_id: "run-a" })),
    );
    const reopened = saverOn(name, await encrypted());
    const error = await rejection(reopened.deleteForRuns(["run-a"]));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(error.message).toContain('thread "innocent"');
    // Nothing was deleted.
    const innocent = await reopened.getTuple({ configurable: { thread_id: "innocent" } }).catch((e: unknown) => e);
    expect(innocent).toBeInstanceOf(DecryptionError); // its run id still disagrees with its metadata
    const doomed = await reopened.getTuple({ configurable: { thread_id: "doomed" } });
    expect((doomed?.metadata as { run_id?: string } | undefined)?.run_id).toBe("run-a");
  });

  it("copyThread refuses to re-seal a relinked checkpoint under the new thread", async () => {
    const saver = await relinkedSaver("binding-copy");
    expect(await rejection(saver.copyThread(THREAD, "copy"))).toBeInstanceOf(DecryptionError);
    expect(await saver.getTuple({ configurable: { thread_id: "copy" } })).toBeUndefined();
  });

  it("without encryption the same edits are not errors (nothing is authenticated there)", async () => {
    const name = freshDbName("binding-plain");
    created.push(name);
    await deltaThread(saverOn(name));
    await relink3To1(name);
    const saver = saverOn(name);
    expect((await history(saver))[CHANNEL]!.writes.map(([, , value]) => value)).toEqual(["turn 1"]);
  });
});

/**
 * The walk does not decrypt again a row it has proven (src/saver/verify.ts):
 * the same saver, having walked the untouched thread, must still refuse each
 * edit made after that walk. Each test reuses one saver across the edit (it
 * reopens its connection on next use, keeping its bound serializer).
 */
describe("rows already proven by a walk: later edits are still refused", () => {
  const latestHistory = (saver: IndexedDBSaver) =>
    saver.getDeltaChannelHistory({
      config: { configurable: { thread_id: THREAD, checkpoint_ns: "" } },
      channels: [CHANNEL],
    });

  async function walkedThenEdited(
    prefix: string,
    edit: (rows: Record<string, unknown>[]) => Record<string, unknown>[],
  ): Promise<IndexedDBSaver> {
    const name = freshDbName(prefix);
    created.push(name);
    const saver = saverOn(name, await encrypted());
    await deltaThread(saver);
    expect((await latestHistory(saver))[CHANNEL]!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2"]);
    await editRows(name, "checkpoints", edit);
    open.push(saver);
    return saver;
  }

  it("a parent link relinked after the walk", async () => {
    const saver = await walkedThenEdited("proven-relink", (rows) =>
      rows.filter((row) => row.checkpoint_id === "3").map((row) => ({ ...row, parent_checkpoint_id: "1" })),
    );
    expect(await rejection(latestHistory(saver))).toBeInstanceOf(DecryptionError);
  });

  it("an ancestor's clear versions edited after the walk", async () => {
    const saver = await walkedThenEdited("proven-seed", (rows) =>
      rows.filter((row) => row.checkpoint_id === "2").map((row) => ({ ...row, channel_versions: { [CHANNEL]: "v1" } })),
    );
    const error = await rejection(latestHistory(saver));
    expect(error).toBeInstanceOf(DecryptionError);
    expect(error.message).toMatch(/Checkpoint 2 of thread "victim"/);
  });

  it("an ancestor's sealed checkpoint swapped for another's, clear fields untouched: walks stay right, its reads fail", async () => {
    const saver = await walkedThenEdited("proven-sealed", (rows) => {
      const [two, one] = ["2", "1"].map((id) => rows.find((row) => row.checkpoint_id === id)!);
      return [{ ...two, checkpoint: one!.checkpoint }];
    });
    // A walk reads only the clear links and versions, which the hash chain
    // (binding version 3) still proves; the swapped bytes fail where they are read.
    expect((await latestHistory(saver))[CHANNEL]!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2"]);
    const config = { configurable: { thread_id: "victim", checkpoint_ns: "", checkpoint_id: "2" } };
    expect(await rejection(saver.getTuple(config))).toBeInstanceOf(DecryptionError);
  });

  it("an untouched thread walks again without error, and so does a row put back as it was", async () => {
    let original: Record<string, unknown> | undefined;
    const saver = await walkedThenEdited("proven-restored", (rows) => {
      original = rows.find((row) => row.checkpoint_id === "3");
      return [{ ...original, parent_checkpoint_id: "1" }];
    });
    expect(await rejection(latestHistory(saver))).toBeInstanceOf(DecryptionError);
    await editRows(saver.dbName, "checkpoints", () => [original!]);
    open.push(saver);
    expect((await latestHistory(saver))[CHANNEL]!.writes.map(([, , value]) => value)).toEqual(["turn 1", "turn 2"]);
  });
});
