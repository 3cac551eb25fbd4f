/**
 * The row format 1 size goldens (test/golden/saver-plain-format1-sizes.json
 * and test/golden/saver-encrypted-format1-sizes.json, written once by
 * test/golden/generate-format1-sizes.ts): channel values from 1 KiB to
 * 12 KiB, all in `blobs`, some shared by checkpoints that did not change
 * them, and a removed run. Each loads exactly as dumped, reads back every
 * recorded answer, keeps every record, takes a checkpoint on top that reads
 * back with the same values, deletes that checkpoint's run without losing a
 * blob the stored checkpoints still name, and its journal alone restores an
 * emptied database. A row format that keeps small values inline must still
 * pass this file. Node and Chromium.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { SIZES_THREAD, readSizesThread } from "../golden/format1-sizes.js";
import { journalGoldenCases, journalGoldenSavers } from "../golden/journal-goldens.js";
import encryptedGolden from "../golden/saver-encrypted-format1-sizes.json";
import plainGolden from "../golden/saver-plain-format1-sizes.json";
import { expectRecordsKept } from "../golden/saver-checks.js";
import { SAVER_SCHEMA_3, expectAnswers, schemaOf } from "../golden/shared.js";

const savers = journalGoldenSavers("golden-format1-sizes");

describe.each(journalGoldenCases(plainGolden, encryptedGolden))(
  "saver database of row format 1, values of every size: $name",
  (testCase) => {
    const { golden } = testCase;
    const open = () => savers.open(testCase);

    it("is row format 1 at schema version 3, every value in a blob", () => {
      expect(schemaOf(golden.dump)).toEqual(SAVER_SCHEMA_3);
      const records = (store: string) => golden.dump.stores.find((s) => s.name === store)!.records;
      expect(records("meta")).toContainEqual(["format", { name: "format", value: 1 }]);
      expect(records("blobs")).toHaveLength(11);
    });

    it("reads back every answer as recorded and keeps every record", async () => {
      const saver = await open();
      expectAnswers(await readSizesThread(saver), golden.expected);
      await saver.close();
      await expectRecordsKept(saver.dbName, golden.dump);
    });

    it("takes a checkpoint on top that reads back with the same values; deleting its run keeps the shared blobs", async () => {
      const saver = await open();
      const head = (await saver.getTuple({ configurable: { thread_id: SIZES_THREAD, checkpoint_ns: "" } }))!;
      const values = head.checkpoint.channel_values;
      const next = await saver.put(
        head.config,
        {
          ...head.checkpoint,
          id: `${head.checkpoint.id}-next`,
          channel_values: { ...values, small: { n: 9 } },
          channel_versions: { ...head.checkpoint.channel_versions, small: 9 },
        },
        { source: "update", step: 99, parents: {}, run_id: "run-next" } as CheckpointMetadata,
        { small: 9 },
      );
      expect((await saver.getTuple(next))?.checkpoint.channel_values).toEqual({ ...values, small: { n: 9 } });
      await saver.deleteForRuns(["run-next"], { threadId: SIZES_THREAD });
      expect(await saver.getTuple(next)).toBeUndefined();
      expectAnswers(await readSizesThread(saver), golden.expected);
    });

    it("restores an emptied database from its journal alone, to the same answers", async () => {
      const saver = await savers.fromJournal(testCase);
      expectAnswers(await readSizesThread(saver), golden.expected);
    });
  },
);
