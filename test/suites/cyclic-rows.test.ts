/**
 * A checkpoint row of a saver without encryption whose metadata was edited
 * to a value holding a cycle (structured clone keeps one; only someone who
 * edits the profile's files can store it). `deleteForRuns` compares each
 * row it deletes with the row it checked (core/equality.ts `sameClone`);
 * before the fix that comparison recursed around the cycle until the stack
 * overflowed: "RangeError: Maximum call stack size exceeded", and the run
 * could never be rolled back. Now the cycle compares equal where it closes:
 * the run's checkpoint goes (without encryption the clear `run_id` decides,
 * as docs/encryption.md says), the others stay, and reads of the edited row
 * still name it. Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBSaver, SerializationError } from "../../src/index.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { checkpointOf as cp, stepMetadata as meta, threadAt as at } from "../support/inline-rows.js";
import { putRaw, readStore } from "../support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();

/** A cyclic object, and a list holding itself. */
const cyclicObject = (): unknown => {
  const value: Record<string, unknown> = { run_id: "r2" };
  value.self = value;
  return value;
};
const cyclicList = (): unknown => {
  const value: unknown[] = ["msgpack"];
  value.push(value);
  return value;
};

describe("a row's metadata edited to a value with a cycle", () => {
  it.each([
    ["an object holding itself", cyclicObject],
    ["a list holding itself", cyclicList],
  ])("(%s): deleteForRuns deletes the run's checkpoint, no RangeError", async (_label, metadata) => {
    const dbName = freshDbName("cyclic-rows");
    const writer = track(new IndexedDBSaver({ dbName }));
    const ofRun = (run_id: string) => ({ ...meta, run_id }) as typeof meta;
    const c1 = await writer.put(at("t"), cp("c1", { a: "one" }, { a: 1 }), ofRun("r1"), { a: 1 });
    const c2 = await writer.put(c1, cp("c2", { a: "two" }, { a: 2 }), ofRun("r2"), { a: 2 });
    await writer.put(c2, cp("c3", { a: "two" }, { a: 2 }), ofRun("r3"), {});
    await writer.close();
    const row = (await readStore<CheckpointRow>(dbName, "checkpoints")).find((r) => r.checkpoint_id === "c2")!;
    await putRaw(dbName, "checkpoints", [{ ...row, metadata: metadata() }]);

    const saver = track(new IndexedDBSaver({ dbName }));
    await expect(saver.getTuple(at("t", "c2"))).rejects.toBeInstanceOf(SerializationError);
    await saver.deleteForRuns(["r2"]);
    const left = (await readStore<CheckpointRow>(dbName, "checkpoints")).map((r) => r.checkpoint_id);
    expect(left.sort()).toEqual(["c1", "c3"]);
    expect((await saver.getTuple(at("t", "c3")))?.checkpoint.channel_values).toEqual({ a: "two" });
  });
});
