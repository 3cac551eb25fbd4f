/**
 * A delete of a thread up to a checkpoint id (what sync pulls when another
 * device deleted the thread) keeps the checkpoints put after it; under row
 * format 2 the values a deleted row held inline that a kept row still names
 * move to blob rows, so the kept checkpoint reads back whole. Node and Chromium.
 */
import { emptyCheckpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { expect, it } from "vitest";
import { IndexedDBSaver } from "./index.js";
import { deleteUpTo } from "./delete-thread.js";
import { rawAccessOf } from "./raw-access.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();
const meta = { source: "loop", step: 0, parents: {} } as CheckpointMetadata;

it("keeps the values a kept checkpoint names that a deleted row held inline", async () => {
  const saver = track(new IndexedDBSaver({ dbName: freshDbName("delete-up-to") }));
  const root = { configurable: { thread_id: "t", checkpoint_ns: "" } };
  const first = await saver.put(
    root,
    { ...emptyCheckpoint(), id: "c1", channel_values: { a: "from c1", b: 1 }, channel_versions: { a: 1, b: 1 } },
    meta,
    { a: 1, b: 1 },
  );
  await saver.put(
    first,
    { ...emptyCheckpoint(), id: "c2", channel_values: { a: "from c1", b: 2 }, channel_versions: { a: 1, b: 2 } },
    meta,
    { b: 2 },
  );
  const access = rawAccessOf(saver)!;
  await access.write(
    ["checkpoints", "blobs", "writes", "threads", "meta"],
    (tx) => deleteUpTo(tx, access.db.ranges, "t", "c1"),
    "delete up to c1",
  );
  const reader = track(new IndexedDBSaver({ dbName: saver.dbName }));
  expect((await reader.getTuple(root))?.checkpoint.channel_values).toEqual({ a: "from c1", b: 2 });
  expect(await reader.getTuple({ configurable: { ...root.configurable, checkpoint_id: "c1" } })).toBeUndefined();
});
