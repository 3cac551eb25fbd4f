/**
 * The journals of the row format 2 golden databases, in the OPFS journal
 * (test/golden/saver-plain-format2.json and test/golden/saver-encrypted-format2.json):
 * the bytes their savers kept, written into the files `journal: "opfs"`
 * reads, restore an emptied database to every recorded answer. The memory
 * backend's replay is golden-format2.test.ts's; this is the same file
 * through OPFS and its worker. Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver, type RecoveryReport } from "../../src/index.js";
import { JOURNAL_DIRECTORY, OpfsJournalBackend, journalFiles } from "../../src/journal/opfs-backend.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { readFormat2 } from "../golden/format2.js";
import encryptedGolden from "../golden/saver-encrypted-format2.json";
import plainGolden from "../golden/saver-plain-format2.json";
import { RAW_KEY, deleteDatabase, expectAnswers, fromBase64, type Tagged } from "../golden/shared.js";
import { freshDbName } from "../support/databases.js";

const cases = [
  { name: "plain", golden: plainGolden, serde: async () => undefined },
  { name: "encrypted", golden: encryptedGolden, serde: () => EncryptedSerializer.fromRawKey(RAW_KEY) },
];

const created: string[] = [];
afterEach(async () => {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(JOURNAL_DIRECTORY, { create: true });
  for (const name of created.splice(0)) {
    await deleteDatabase(indexedDB, name);
    for (const file of journalFiles(name)) await dir.removeEntry(file).catch(() => undefined);
  }
});

describe.each(cases)("the row format 2 golden journal in OPFS ($name)", ({ golden, serde }) => {
  it("restores an emptied database to every recorded answer", async () => {
    const name = freshDbName("golden-format2-opfs");
    created.push(name);
    const backend = new OpfsJournalBackend(name);
    await backend.open();
    await backend.replace(fromBase64(golden.journal));
    await backend.close();
    const reports: RecoveryReport[] = [];
    const saver = new IndexedDBSaver({
      dbName: name,
      journal: "opfs",
      serde: await serde(),
      onRecovery: (report) => reports.push(report),
    });
    try {
      const answers = await readFormat2(saver);
      expectAnswers(answers, golden.expected as unknown as Record<string, Tagged>);
      expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
    } finally {
      await saver.close();
    }
  });
});
