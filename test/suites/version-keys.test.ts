/**
 * A checkpoint row whose clear channel version was edited (by someone who
 * can edit the profile's files) to a value IndexedDB takes as no key, of a
 * type the row check let through: a Map, a Set, a RegExp, an Error, a
 * Boolean or String object, a list holding one, a list holding itself, a
 * list with a hole (structured clone keeps all of them). Before the fix
 * the check passed every object that is not a plain one: `getTuple` of the
 * row failed with IndexedDB's bare `DataError` ("IndexedDB failed to get
 * checkpoint"), naming no row, and `list` did too and left a rejection
 * unhandled. Now every read that meets the row is a SerializationError
 * naming it, with nothing unhandled, as for null or NaN
 * (test/suites/inline-malformed.test.ts). Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBSaver, SerializationError } from "../../src/index.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { checkpointOf as cp, stepMetadata as meta, threadAt as at } from "../support/inline-rows.js";
import { captureUnhandledRejections, describeReasons, putRaw, readStore } from "../support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
const cyclic: unknown[] = [1];
cyclic.push(cyclic);

const EDITS: [string, unknown][] = [
  ["a Map", new Map([["a", 1]])],
  ["a Set", new Set([1])],
  ["a RegExp", /1/],
  ["an Error", new Error("1")],
  ["a Boolean object", new Boolean(true)],
  ["a String object", new String("1")],
  ["a list holding a Map", [1, new Map()]],
  ["a list holding itself", cyclic],
  ["a list with a hole", Object.assign(new Array<unknown>(2), { 1: 1 })],
];

describe("a channel version edited to a value that is no IndexedDB key", () => {
  it.each(EDITS)("(%s): reads name the row, nothing unhandled", async (_label, version) => {
    const dbName = freshDbName("version-keys");
    const writer = track(new IndexedDBSaver({ dbName }));
    const c1 = await writer.put(at("t"), cp("c1", { a: "one", b: "two" }, { a: 1, b: 1 }), meta, { a: 1, b: 1 });
    await writer.put(c1, cp("c2", { a: "one", b: "two" }, { a: 1, b: 1 }), meta, {});
    await writer.close();
    const row = (await readStore<CheckpointRow>(dbName, "checkpoints")).find((r) => r.checkpoint_id === "c1")!;
    await putRaw(dbName, "checkpoints", [{ ...row, channel_versions: { ...row.channel_versions, b: version } }]);

    const unhandled = captureUnhandledRejections();
    const reader = track(new IndexedDBSaver({ dbName }));
    const list = async () => {
      for await (const tuple of reader.list(at("t"))) void tuple;
    };
    for (const read of [() => reader.getTuple(at("t", "c1")), list]) {
      const error = await read().then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error, String(error)).toBeInstanceOf(SerializationError);
      expect(error!.message).toMatch(/Checkpoint c1 of thread "t" has a channel version that is not a valid key/);
    }
    expect(describeReasons(await unhandled.stop())).toEqual([]);
  });
});
