/**
 * The schema version 5 goldens (test/golden/saver-plain-schema5.json and
 * test/golden/saver-encrypted-schema5.json, written once by
 * test/golden/generate-schema5.ts): checkpoint rows listing the channel
 * versions they have without a stored value (`absent_keys`), introduced,
 * carried over and on a fork. Each loads exactly as dumped, lists what was
 * written, reads back as recorded (and the same with every list removed: the
 * list only spares reads), keeps every record, is what the same writes give
 * today, restores from its journal alone, and the code of schema steps 1-4
 * refuses it as written by a newer version. A later version must still pass
 * this file. Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../../src/index.js";
import { ABSENT_LISTS, readAbsentThread, writeAbsentThread } from "../golden/schema5.js";
import { journalGoldenCases, journalGoldenSavers } from "../golden/journal-goldens.js";
import encryptedGolden from "../golden/saver-encrypted-schema5.json";
import plainGolden from "../golden/saver-plain-schema5.json";
import { expectRecordsKept, expectRefusedByOlderCode } from "../golden/saver-checks.js";
import {
  SAVER_SCHEMA_5,
  SAVER_SCHEMA_6,
  checkpointId,
  dumpDatabase,
  expectAnswers,
  schemaOf,
  type DatabaseDump,
  type Tagged,
} from "../golden/shared.js";
import { freshDbName } from "../support/databases.js";

const savers = journalGoldenSavers("golden-schema5");

/** The channels each row of `dump` lists, by checkpoint id. */
function lists(dump: DatabaseDump): Record<string, string[]> {
  const rows = dump.stores.find((s) => s.name === "checkpoints")!.records;
  return Object.fromEntries(
    rows.map(([, row]) => {
      const r = row as { checkpoint_id: string; absent_keys?: Tagged[][] };
      return [r.checkpoint_id, (r.absent_keys ?? []).map((key) => key[2] as string).sort()];
    }),
  );
}

const listsWritten = Object.fromEntries(
  Object.entries(ABSENT_LISTS).map(([n, list]) => [checkpointId(Number(n)), list]),
);

describe.each(journalGoldenCases(plainGolden, encryptedGolden))(
  "saver database of schema version 5: $name",
  (testCase) => {
    const { golden } = testCase;
    const expected = golden.expected as unknown as Record<string, Tagged>;

    it("is schema version 5, row format 2, its rows listing the versions written without a value", () => {
      expect(schemaOf(golden.dump)).toEqual(SAVER_SCHEMA_5);
      expect(golden.dump.stores.find((s) => s.name === "meta")!.records).toContainEqual([
        "format",
        { name: "format", value: 2 },
      ]);
      expect(lists(golden.dump)).toEqual(listsWritten);
    });

    it("reads back every answer as recorded and keeps every record", async () => {
      const saver = await savers.open(testCase);
      expectAnswers(await readAbsentThread(saver), expected);
      await saver.close();
      await expectRecordsKept(saver.dbName, golden.dump);
    });

    it("upgrades to schema version 6 (by_parent gone, every record kept), which steps 1-5 refuse", async () => {
      const saver = await savers.open(testCase);
      await saver.getTuple({ configurable: { thread_id: "nothing" } });
      await saver.close();
      const upgraded = await dumpDatabase(indexedDB, saver.dbName);
      expect(schemaOf(upgraded)).toEqual(SAVER_SCHEMA_6);
      await expectRecordsKept(saver.dbName, golden.dump);
      await expectRefusedByOlderCode(upgraded, 5);
      // The upgraded database, loaded fresh at version 6, reads as recorded too.
      const again = await savers.open({ ...testCase, golden: { ...golden, dump: upgraded } });
      expectAnswers(await readAbsentThread(again), expected);
    });

    it("reads the same with every list removed: a list only spares reads of values that are not there", async () => {
      const stripped: DatabaseDump = {
        ...golden.dump,
        stores: golden.dump.stores.map((s) =>
          s.name !== "checkpoints"
            ? s
            : {
                ...s,
                records: s.records.map(([key, row]) => {
                  const { absent_keys: _list, ...rest } = row as Record<string, Tagged>;
                  return [key, rest];
                }),
              },
        ),
      };
      const saver = await savers.open({ ...testCase, golden: { ...golden, dump: stripped } });
      expectAnswers(await readAbsentThread(saver), expected);
    });

    it("the same writes today give the recorded answers and lists", async () => {
      const saver = new IndexedDBSaver({ dbName: freshDbName("golden-schema5-today"), serde: await testCase.serde() });
      try {
        await writeAbsentThread(saver);
        expectAnswers(await readAbsentThread(saver), expected);
      } finally {
        await saver.close();
      }
      expect(lists(await dumpDatabase(indexedDB, saver.dbName))).toEqual(listsWritten);
    });

    it("restores an emptied database from its journal alone, to the same answers", async () => {
      const saver = await savers.fromJournal(testCase);
      expectAnswers(await readAbsentThread(saver), expected);
    });

    it("is refused by the code of schema steps 1-4 as written by a newer version", async () => {
      await expectRefusedByOlderCode(golden.dump, 4);
    });
  },
);
