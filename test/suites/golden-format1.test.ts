/**
 * The golden databases of row format 1 (test/golden/saver-plain-format1.json
 * and test/golden/saver-encrypted-format1.json, written once by
 * test/golden/generate-format1.ts): the last format-1 layout, with the
 * journal its saver kept. Each loads exactly as dumped, opens with today's
 * code, reads back every recorded answer, keeps every record as it was,
 * takes new checkpoints on top; and its journal alone restores an emptied
 * database to the same answers. A later row format must still pass this
 * file: it is that format's upgrade test. Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import type { IndexedDBSaver, RecoveryReport } from "../../src/index.js";
import { readFormat1Extras } from "../golden/format1.js";
import { journalGoldenCases, journalGoldenSavers } from "../golden/journal-goldens.js";
import encryptedGolden from "../golden/saver-encrypted-format1.json";
import plainGolden from "../golden/saver-plain-format1.json";
import { SAVER_SCHEMA_3, expectAnswers, readSaver, schemaOf } from "../golden/shared.js";
import { expectPutOnTopOfChat, expectRecordsKept } from "../golden/saver-checks.js";

const savers = journalGoldenSavers("golden-format1");

describe.each(journalGoldenCases(plainGolden, encryptedGolden))("saver database of row format 1: $name", (testCase) => {
  const { golden } = testCase;
  const open = () => savers.open(testCase);

  /** Every answer the golden recorded, asked of `saver`. */
  async function answers(saver: IndexedDBSaver) {
    return { ...(await readSaver(saver)), ...(await readFormat1Extras(saver)) };
  }

  it("is row format 1 at schema version 3", () => {
    expect(schemaOf(golden.dump)).toEqual(SAVER_SCHEMA_3);
    const meta = golden.dump.stores.find((store) => store.name === "meta")!;
    expect(meta.records).toContainEqual(["format", { name: "format", value: 1 }]);
  });

  it("reads back every checkpoint, pending write, delta history, removed run and thread as recorded", async () => {
    expectAnswers(await answers(await open()), golden.expected);
  });

  it("keeps every record as it was once opened and read", async () => {
    const saver = await open();
    await answers(saver);
    await saver.close();
    await expectRecordsKept(saver.dbName, golden.dump);
  });

  it("takes a new checkpoint on top of the stored chat, and walks and lists across old and new rows", async () => {
    await expectPutOnTopOfChat(await open());
  });

  it("restores an emptied database from its journal alone, to the same answers", async () => {
    const reports: RecoveryReport[] = [];
    const saver = await savers.fromJournal(testCase, (report) => reports.push(report));
    expectAnswers(await answers(saver), golden.expected);
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
  });
});
