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
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver, type RecoveryReport } from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { readFormat1Extras } from "../golden/format1.js";
import encryptedGolden from "../golden/saver-encrypted-format1.json";
import plainGolden from "../golden/saver-plain-format1.json";
import {
  RAW_KEY,
  SAVER_SCHEMA_3,
  deleteDatabase,
  expectAnswers,
  fromBase64,
  loadDatabase,
  readSaver,
  schemaOf,
  type SaverGolden,
} from "../golden/shared.js";
import { expectPutOnTopOfChat, expectRecordsKept } from "../golden/saver-checks.js";
import { freshDbName } from "../support/databases.js";

/** A format-1 golden: a saver golden with the journal its saver kept. */
type Format1Golden = SaverGolden & { journal: string };

const cases = [
  { name: "plain (MsgpackSerializer)", golden: plainGolden as unknown as Format1Golden, serde: async () => undefined },
  {
    name: "encrypted (EncryptedSerializer.fromRawKey)",
    golden: encryptedGolden as unknown as Format1Golden,
    serde: () => EncryptedSerializer.fromRawKey(RAW_KEY),
  },
];

const created: string[] = [];
const savers: IndexedDBSaver[] = [];
afterEach(async () => {
  for (const saver of savers.splice(0)) await saver.close();
  for (const name of created.splice(0)) {
    MemoryJournalBackend.setFile(name, undefined);
    await deleteDatabase(indexedDB, name);
  }
});

describe.each(cases)("saver database of row format 1: $name", ({ golden, serde }) => {
  /** A saver on a fresh database loaded from the golden dump. */
  async function open(): Promise<IndexedDBSaver> {
    const name = freshDbName("golden-format1");
    created.push(name);
    await loadDatabase(indexedDB, name, golden.dump);
    const saver = new IndexedDBSaver({ dbName: name, serde: await serde() });
    savers.push(saver);
    return saver;
  }

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
    const name = freshDbName("golden-format1-journal");
    created.push(name);
    MemoryJournalBackend.setFile(name, fromBase64(golden.journal));
    const reports: RecoveryReport[] = [];
    const saver = new IndexedDBSaver({
      dbName: name,
      journal: "memory",
      serde: await serde(),
      onRecovery: (report) => reports.push(report),
    });
    savers.push(saver);
    expectAnswers(await answers(saver), golden.expected);
    expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
  });
});
