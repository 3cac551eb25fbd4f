/**
 * The row format 2 goldens (test/golden/saver-plain-format2.json and
 * test/golden/saver-encrypted-format2.json, written once by
 * test/golden/generate-format2.ts): small channel values inline in their
 * checkpoint rows, larger ones in blob rows, and values a removed run's row
 * held inline moved to blob rows for the checkpoint that still names them.
 * Each loads exactly as dumped, gives the very answers the format 1 size
 * goldens recorded for the same writes, keeps every record, takes a
 * checkpoint on top, copies, exports and re-imports its threads to the same
 * answers, its journal alone restores an emptied database, and the format 1
 * code (schema steps 1-3) refuses it as written by a newer version. A later
 * format must still pass this file. Node and Chromium.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { IndexedDBSaver, importThread } from "../../src/index.js";
import { rawAccessOf } from "../../src/saver/raw-access.js";
import { readThread } from "../../src/sync/push.js";
import { SIZES_THREAD, writeSizesThread } from "../golden/format1-sizes.js";
import { INLINE_THREAD, readFormat2, writeInlineThread } from "../golden/format2.js";
import { journalGoldenCases, journalGoldenSavers } from "../golden/journal-goldens.js";
import encryptedGolden from "../golden/saver-encrypted-format2.json";
import plainGolden from "../golden/saver-plain-format2.json";
import encryptedSizes from "../golden/saver-encrypted-format1-sizes.json";
import plainSizes from "../golden/saver-plain-format1-sizes.json";
import { expectRecordsKept, expectRefusedByOlderCode } from "../golden/saver-checks.js";
import { SAVER_SCHEMA_4, comparable, expectAnswers, schemaOf, type Tagged } from "../golden/shared.js";
import { freshDbName } from "../support/databases.js";

const savers = journalGoldenSavers("golden-format2");
const sizesOf = { plain: plainSizes, encrypted: encryptedSizes };

describe.each(journalGoldenCases(plainGolden, encryptedGolden))("saver database of row format 2: $name", (testCase) => {
  const { golden } = testCase;
  const open = () => savers.open(testCase);
  const records = (store: string) => golden.dump.stores.find((s) => s.name === store)!.records;
  const expected = golden.expected as unknown as Record<string, Tagged>;

  it("is row format 2 at schema version 4: small values inline, the others (and moved ones) in blobs", () => {
    expect(schemaOf(golden.dump)).toEqual(SAVER_SCHEMA_4);
    expect(records("meta")).toContainEqual(["format", { name: "format", value: 2 }]);
    const inline = records("checkpoints").flatMap(([, row]) => Object.keys((row as { inline?: object }).inline ?? {}));
    expect(inline.sort()).toEqual(["k1", "small", "small", "sub_small", "y", "y"]);
    expect(records("blobs").map(([key]) => (key as string[]).slice(2).join("@"))).toContain("x@1");
  });

  it("answers as the format 1 goldens of the same writes recorded", () => {
    const format1 = (testCase.name.startsWith("plain") ? sizesOf.plain : sizesOf.encrypted).expected;
    const sizes = Object.fromEntries(Object.keys(format1).map((key) => [key, expected[key]]));
    expect(sizes).toEqual(format1);
  });

  it("reads back every answer as recorded and keeps every record", async () => {
    const saver = await open();
    expectAnswers(await readFormat2(saver), expected);
    await saver.close();
    await expectRecordsKept(saver.dbName, golden.dump);
  });

  it("takes a checkpoint on top that reads back; deleting its run keeps the values the others name", async () => {
    const saver = await open();
    const head = (await saver.getTuple({ configurable: { thread_id: INLINE_THREAD } }))!;
    const next = await saver.put(
      head.config,
      {
        ...head.checkpoint,
        id: `${head.checkpoint.id}-next`,
        channel_values: { ...head.checkpoint.channel_values, y: 9 },
        channel_versions: { ...head.checkpoint.channel_versions, y: 9 },
      },
      { source: "update", step: 99, parents: {}, run_id: "run-next" } as CheckpointMetadata,
      { y: 9 },
    );
    expect((await saver.getTuple(next))?.checkpoint.channel_values).toEqual({
      ...head.checkpoint.channel_values,
      y: 9,
    });
    await saver.deleteForRuns(["run-next"], { threadId: INLINE_THREAD });
    expect(await saver.getTuple(next)).toBeUndefined();
    expectAnswers(await readFormat2(saver), expected);
  });

  it("copies, exports and imports both threads to the same answers", async () => {
    const saver = await open();
    for (const thread of [SIZES_THREAD, INLINE_THREAD]) {
      await saver.copyThread(thread, `${thread}-copy`);
      const file = await saver.exportThread(thread, { as: "bytes" });
      const target = new IndexedDBSaver({
        dbName: freshDbName("golden-format2-import"),
        serde: await testCase.serde(),
      });
      try {
        const serde = await testCase.serde();
        await importThread(target, file, serde ? { serde } : {});
        for (const reader of [target, saver]) {
          const id = reader === saver ? `${thread}-copy` : thread;
          const [a, b] = await Promise.all([
            saver.getTuple({ configurable: { thread_id: thread } }),
            reader.getTuple({ configurable: { thread_id: id } }),
          ]);
          expect(comparable(b?.checkpoint)).toEqual(comparable(a?.checkpoint));
        }
      } finally {
        await target.close();
      }
    }
  });

  it("the same writes today give the recorded answers", async () => {
    const saver = new IndexedDBSaver({ dbName: freshDbName("golden-format2-today"), serde: await testCase.serde() });
    try {
      await writeSizesThread(saver);
      await writeInlineThread(saver);
      expectAnswers(await readFormat2(saver), expected);
    } finally {
      await saver.close();
    }
  });

  it("pushes the size thread to the sync wire as the format 1 golden of the same writes does", async () => {
    const plain = testCase.name.startsWith("plain");
    const format1 = plain ? sizesOf.plain : sizesOf.encrypted;
    const bundles = async (saver: IndexedDBSaver) =>
      (await readThread(rawAccessOf(saver)!, SIZES_THREAD)).map(({ wire }) => ({
        ...wire,
        blobs: [...wire.blobs].sort((a, b) => (a.channel < b.channel ? -1 : 1)),
      }));
    const [ours, theirs] = [
      await bundles(await open()),
      await bundles(await savers.open({ ...testCase, golden: format1 as unknown as typeof golden })),
    ];
    const shape = (list: typeof ours) =>
      list.map((wire) => [wire.checkpoint_id, wire.blobs.map((blob) => `${blob.channel}@${String(blob.version)}`)]);
    expect(shape(ours)).toEqual(shape(theirs));
    // MsgpackSerializer's bytes are deterministic: the same bundles, byte for byte. (Encrypted ones differ by their IVs.)
    if (plain) expect(ours).toEqual(theirs);
  });

  it("restores an emptied database from its journal alone, to the same answers", async () => {
    const saver = await savers.fromJournal(testCase);
    expectAnswers(await readFormat2(saver), expected);
  });

  it("is refused by the format 1 code (schema steps 1-3) as written by a newer version", async () => {
    await expectRefusedByOlderCode(golden.dump, 3);
  });
});
