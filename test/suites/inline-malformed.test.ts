/**
 * Row format 2's inline values of a saver without encryption, made
 * malformed by someone editing the profile's files: values that are not
 * `[type, bytes]`, not a MsgpackSerializer payload, or claim lengths far
 * beyond their bytes; an `inline` map that is not a map; a row holding
 * values inline without channel versions. Every read that meets one gives
 * a package error naming the row (never a TypeError, an unhandled
 * rejection, or the value read as missing), and the saver and the other
 * rows keep working. Node and Chromium.
 *
 * The thread: c1 introduces a@1 (inline), c2 a@2 (inline), c3 none; the
 * cases edit c2.
 */
import { describe, expect, it } from "vitest";
import {
  DecryptionError,
  EncryptedSerializer,
  type IndexedDBCheckpointError,
  IndexedDBSaver,
  SerializationError,
} from "../../src/index.js";
import type { CheckpointRow } from "../../src/rows/shapes.js";
import { rawAccessOf } from "../../src/saver/raw-access.js";
import { applyChanges } from "../../src/sync/pull.js";
import type { WireChange } from "../../src/sync/protocol.js";
import { freshDbName, trackSavers } from "../support/databases.js";
import { checkpointOf as cp, stepMetadata as meta, threadAt as at } from "../support/inline-rows.js";
import { byDepth } from "../support/depth.js";
import { captureUnhandledRejections, describeReasons, putRaw, readStore, scanAll } from "../support/reliability/raw.js";

const track = trackSavers<IndexedDBSaver>();
/** A MsgpackSerializer payload's header (the 0xC1 marker, version 1), then `body`. */
const payload = (...body: number[]) => Uint8Array.from([0xc1, 0x01, ...body]);

/** Thread t (c1-c3, of runs r1-r3) and thread u in a fresh database; c2's row as stored, for editing. */
async function thread(serde?: EncryptedSerializer) {
  const dbName = freshDbName("inline-malformed");
  const saver = track(new IndexedDBSaver({ dbName, ...(serde && { serde }) }));
  const ofRun = (run_id: string) => ({ ...meta, run_id }) as typeof meta;
  const c1 = await saver.put(at("t"), cp("c1", { a: "one" }, { a: 1 }), ofRun("r1"), { a: 1 });
  const c2 = await saver.put(c1, cp("c2", { a: "two" }, { a: 2 }), ofRun("r2"), { a: 2 });
  await saver.put(c2, cp("c3", { a: "two" }, { a: 2 }), ofRun("r3"), {});
  await saver.put(at("u"), cp("c1", { a: "you" }, { a: 1 }), meta, { a: 1 });
  await saver.close();
  const c2Row = (await readStore<CheckpointRow>(dbName, "checkpoints")).find(
    (row) => row.thread_id === "t" && row.checkpoint_id === "c2",
  )!;
  expect(Object.keys(c2Row.inline!)).toEqual(["a"]);
  return { dbName, c2Row };
}

/** The reads of thread t that meet c2's values (c3 names a@2, which c2 holds). */
const reads: [string, (saver: IndexedDBSaver) => Promise<unknown>][] = [
  ["getTuple c2", (saver) => saver.getTuple(at("t", "c2"))],
  ["getTuple c3", (saver) => saver.getTuple(at("t", "c3"))],
  ["getTuple latest", (saver) => saver.getTuple(at("t"))],
  [
    "list",
    async (saver) => {
      for await (const tuple of saver.list(at("t"))) void tuple;
    },
  ],
  ["delta walk", (saver) => saver.getDeltaChannelHistory({ config: at("t", "c3"), channels: ["a"] })],
  ["exportThread", (saver) => saver.exportThread("t", { as: "bytes" })],
];

/**
 * Runs every read on a fresh saver: each must fail with `errorClass` and
 * a message matching `message`, leave no unhandled rejection, and leave
 * the saver working (thread u reads, a new checkpoint is stored).
 */
async function expectClearErrors(
  dbName: string,
  what: string,
  message: RegExp,
  errorClass: typeof IndexedDBCheckpointError = SerializationError,
  serde?: EncryptedSerializer,
): Promise<void> {
  const unhandled = captureUnhandledRejections();
  const saver = track(new IndexedDBSaver({ dbName, ...(serde && { serde }) }));
  for (const [name, read] of reads) {
    const failure = read(saver);
    await expect(failure, `${what}: ${name}`).rejects.toBeInstanceOf(errorClass);
    await expect(failure, `${what}: ${name}`).rejects.toThrow(message);
  }
  expect((await saver.getTuple(at("u")))?.checkpoint.channel_values, what).toEqual({ a: "you" });
  await saver.put(at("v"), cp("c1", { a: "vee" }, { a: 1 }), meta, { a: 1 });
  expect((await saver.getTuple(at("v")))?.checkpoint.channel_values, what).toEqual({ a: "vee" });
  await saver.close();
  expect(describeReasons(await unhandled.stop()), what).toEqual([]);
}

type NamedDelete = [string, () => Promise<unknown>];

/** The deletes that reach c2 of thread "t": its run's (r2), `also`, a removal sync pulls, prune. */
function deletesOfC2(saver: IndexedDBSaver, ...also: NamedDelete[]): NamedDelete[] {
  const removal: WireChange = {
    kind: "removed",
    seq: 1,
    removed: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "c2" },
  };
  return [
    ["deleteForRuns r2", () => saver.deleteForRuns(["r2"])],
    ...also,
    ["pulled removal", () => applyChanges(rawAccessOf(saver)!, [removal], { scope: "s\u0000u", cursor: 1 })],
    ["prune", () => saver.prune(["t"])],
  ];
}

/** Each of `deletes` fails with a SerializationError matching `message`, and every checkpoint row stays. */
async function expectRefusedKeepingAll(dbName: string, deletes: NamedDelete[], message: RegExp): Promise<void> {
  for (const [what, run] of deletes) {
    const failure = run();
    await expect(failure, what).rejects.toBeInstanceOf(SerializationError);
    await expect(failure, what).rejects.toThrow(message);
    const rows = await readStore<CheckpointRow>(dbName, "checkpoints");
    expect(
      rows.map((row) => `${row.thread_id}/${row.checkpoint_id}`),
      what,
    ).toEqual(["t/c1", "t/c2", "t/c3", "u/c1"]);
  }
}

describe("malformed values held inline, without encryption", () => {
  it("a value that is not [type, bytes], not a MsgpackSerializer payload, or claims a huge length: a SerializationError naming the row from every read", async () => {
    const { dbName, c2Row } = await thread();
    const values: [string, unknown, RegExp][] = [
      ["a string", "x", /row \["blob","t","","a",2\] is not a \[type, bytes\] pair/],
      ["two numbers", [1, 2], /row \["blob","t","","a",2\] is not a \[type, bytes\] pair/],
      ["text for bytes", ["msgpack", "text"], /row \["blob","t","","a",2\].*must be bytes/],
      ["no payload header", ["msgpack", Uint8Array.from([0xa3, 0x61, 0x62, 0x63])], /not a MsgpackSerializer payload/],
      ["a str32 of 4 GiB", ["msgpack", payload(0xdb, 0xff, 0xff, 0xff, 0xf0, 0x41)], /row \["blob","t","","a",2\]/],
      ["a bin32 of 4 GiB", ["msgpack", payload(0xc6, 0xff, 0xff, 0xff, 0xff)], /row \["blob","t","","a",2\]/],
      ["an array32 of 2^31", ["msgpack", payload(0xdd, 0x7f, 0xff, 0xff, 0xff)], /row \["blob","t","","a",2\]/],
      ["a map32 of 2^31", ["msgpack", payload(0xdf, 0x7f, 0xff, 0xff, 0xff)], /row \["blob","t","","a",2\]/],
      ["broken JSON", ["json", new TextEncoder().encode("{not json")], /row \["blob","t","","a",2\]/],
    ];
    // One of each kind at the fast depth (each meets the same decode of every read); all at the full depth.
    const kinds = byDepth(["a string", "text for bytes", "a str32 of 4 GiB", "broken JSON"], undefined);
    for (const [what, value, message] of values.filter(([what]) => kinds?.includes(what) ?? true)) {
      await putRaw(dbName, "checkpoints", [{ ...c2Row, inline: { a: value } }]);
      await expectClearErrors(dbName, what, message);
    }
  });

  it("an inline map that is not a map (a number, a string, null, an array): a SerializationError, not the value read as missing", async () => {
    const { dbName, c2Row } = await thread();
    for (const inline of [5, "ab", null, [["msgpack", payload(0xa1, 0x61)]]]) {
      await putRaw(dbName, "checkpoints", [{ ...c2Row, inline }]);
      await expectClearErrors(
        dbName,
        JSON.stringify(inline),
        /Checkpoint c2 of thread "t" holds its inline values in a shape no version of the saver writes/,
      );
    }
  });

  it("a row holding values inline with its channel versions removed: a SerializationError from every read, no TypeError, nothing unhandled", async () => {
    const { dbName, c2Row } = await thread();
    await putRaw(dbName, "checkpoints", [{ ...c2Row, channel_versions: null }]);
    await expectClearErrors(dbName, "null versions", /Checkpoint c2 of thread "t" has no channel versions/);
  });

  it("a parent link edited to something not an id (an object, a number, null): a SerializationError from every read, not a parent config holding it", async () => {
    const { dbName, c2Row } = await thread();
    for (const parent of [{ not: "an id" }, 7, null]) {
      await putRaw(dbName, "checkpoints", [{ ...c2Row, parent_checkpoint_id: parent }]);
      await expectClearErrors(
        dbName,
        JSON.stringify(parent),
        /Checkpoint c2 of thread "t" has a parent link that is not a checkpoint id/,
      );
    }
  });

  it("a channel version edited to something not a key (null, an object, NaN, true, undefined): a SerializationError from every read, not an IndexedDB DataError", async () => {
    const { dbName, c2Row } = await thread();
    for (const version of [null, { v: 2 }, NaN, true, undefined]) {
      await putRaw(dbName, "checkpoints", [{ ...c2Row, channel_versions: { a: version } }]);
      await expectClearErrors(
        dbName,
        String(version),
        /Checkpoint c2 of thread "t" (has a channel version that is not a valid key|is inconsistent)/,
      );
    }
  });

  it("the same row, then deleted (its run, a pulled removal, prune) or kept by a delete around it (another run): a SerializationError naming it, no TypeError, nothing deleted", async () => {
    const { dbName, c2Row } = await thread();
    await putRaw(dbName, "checkpoints", [{ ...c2Row, channel_versions: null }]);
    const saver = track(new IndexedDBSaver({ dbName }));
    const another: NamedDelete = ["deleteForRuns r1", () => saver.deleteForRuns(["r1"])];
    await expectRefusedKeepingAll(
      dbName,
      deletesOfC2(saver, another),
      /Checkpoint c2 of thread "t" has no channel versions/,
    );
  });
});

describe("a row holding a value inline with its clear channel versions edited, then deleted, without encryption", () => {
  // c2 holds a@2 inline, c3 names it. c2's clear versions edited to a: 7 (or the channel removed) would move
  // its value to a blob row at 7 (or nowhere) when c2 goes: c3's value lost with it.
  for (const versions of [{ a: 7 }, {}]) {
    it(`versions ${JSON.stringify(versions)}: its run deleted, a pulled removal, prune: a SerializationError naming it, nothing deleted, c3 still whole once undone`, async () => {
      const { dbName, c2Row } = await thread();
      await putRaw(dbName, "checkpoints", [{ ...c2Row, channel_versions: versions }]);
      const saver = track(new IndexedDBSaver({ dbName }));
      await expectRefusedKeepingAll(dbName, deletesOfC2(saver), /Checkpoint c2 of thread "t" is inconsistent/);
      await saver.close();
      // Undone, the run deletes as it should, its value kept as a blob row for c3.
      await putRaw(dbName, "checkpoints", [c2Row]);
      const reader = track(new IndexedDBSaver({ dbName }));
      await reader.deleteForRuns(["r2"]);
      expect((await reader.getTuple(at("t", "c3")))?.checkpoint.channel_values).toEqual({ a: "two" });
    });
  }
});

describe("copyThread of a row holding malformed inline values, without encryption", () => {
  it("an inline map that is not a map, a value that is not [type, bytes] or at no version of the row, keys of another thread: a SerializationError naming the row, nothing written to the target", async () => {
    const { dbName, c2Row } = await thread();
    const pair = c2Row.inline!.a;
    const edits: [string, Record<string, unknown>][] = [
      ["not a map", { inline: 5 }],
      ["an array", { inline: [pair] }],
      ["not a pair", { inline: { a: "x" } }],
      ["at no version", { inline: { a: pair, z: pair }, inline_keys: [...c2Row.inline_keys!, ["t", "", "z", 2]] }],
      ["keys of another thread", { inline_keys: [["u", "", "a", 2]] }],
    ];
    for (const [what, edit] of edits) {
      await putRaw(dbName, "checkpoints", [{ ...c2Row, ...edit }]);
      const saver = track(new IndexedDBSaver({ dbName }));
      const copying = saver.copyThread("t", "copy");
      await expect(copying, what).rejects.toBeInstanceOf(SerializationError);
      await expect(copying, what).rejects.toThrow(
        /Checkpoint c2 of thread "t" holds its inline values in a shape no version of the saver writes/,
      );
      await saver.close();
      const rows = Object.values(await scanAll(dbName)).flat() as { thread_id?: unknown }[];
      expect(
        rows.filter((row) => row.thread_id === "copy"),
        what,
      ).toEqual([]);
    }
  });
});

describe("malformed rows holding values inline, encrypted", () => {
  it("channel versions removed from the row a walk starts at: fails closed (DecryptionError), not a TypeError", async () => {
    const serde = await EncryptedSerializer.fromRawKey(Uint8Array.from({ length: 32 }, (_, i) => i + 11));
    const { dbName } = await thread(serde);
    const c3Row = (await readStore<CheckpointRow>(dbName, "checkpoints")).find(
      (row) => row.thread_id === "t" && row.checkpoint_id === "c3",
    )!;
    await putRaw(dbName, "checkpoints", [{ ...c3Row, channel_versions: null }]);
    const saver = track(new IndexedDBSaver({ dbName, serde }));
    await expect(saver.getDeltaChannelHistory({ config: at("t", "c3"), channels: ["a"] })).rejects.toBeInstanceOf(
      DecryptionError,
    );
  });
});
