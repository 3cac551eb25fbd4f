/**
 * The OPFS journal of a golden saver database, restored: the bytes its saver
 * kept, written into the files `journal: "opfs"` reads, restore an emptied
 * database to every recorded answer. Shared by the golden suites of each row
 * format (test/suites/golden-format1-opfs.browser.test.ts and
 * test/suites/golden-format2-opfs.browser.test.ts). Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { IndexedDBSaver, type RecoveryReport } from "../../src/index.js";
import { JOURNAL_DIRECTORY, OpfsJournalBackend, journalFiles } from "../../src/journal/opfs-backend.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { RAW_KEY, deleteDatabase, expectAnswers, fromBase64, type Tagged } from "../golden/shared.js";
import { freshDbName } from "./databases.js";
import { frameRecord, parseJournal } from "../../src/journal/format.js";
import { joinBytes } from "../../src/core/bytes.js";

/** A golden file's parts this reads: the journal (base64) and the recorded answers. */
interface JournalGolden {
  journal: string;
  expected: unknown;
}

/**
 * Registers one test per golden (plain, then encrypted under RAW_KEY):
 * `read` gives the answers the golden's `expected` records.
 */
export function describeOpfsGolden(
  label: string,
  goldens: { plain: JournalGolden; encrypted: JournalGolden },
  read: (saver: IndexedDBSaver) => Promise<Record<string, unknown>>,
): void {
  const cases: { name: string; golden: JournalGolden; serde: () => Promise<SerializerProtocol | undefined> }[] = [
    { name: "plain", golden: goldens.plain, serde: async () => undefined },
    { name: "encrypted", golden: goldens.encrypted, serde: () => EncryptedSerializer.fromRawKey(RAW_KEY) },
  ];

  const created: string[] = [];
  afterEach(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(JOURNAL_DIRECTORY, { create: true });
    for (const name of created.splice(0)) {
      await deleteDatabase(indexedDB, name);
      for (const file of journalFiles(name)) await dir.removeEntry(file).catch(() => undefined);
    }
  });

  describe.each(cases)(`the ${label} golden journal in OPFS ($name)`, ({ golden, serde }) => {
    it("restores an emptied database to every recorded answer", async () => {
      const name = freshDbName(`golden-${label.replaceAll(" ", "-")}-opfs`);
      created.push(name);
      const backend = new OpfsJournalBackend(name);
      await backend.open();
      await backend.replace(renamed(fromBase64(golden.journal), name));
      await backend.close();
      const reports: RecoveryReport[] = [];
      const saver = new IndexedDBSaver({
        dbName: name,
        journal: "opfs",
        serde: await serde(),
        onRecovery: (report) => reports.push(report),
      });
      try {
        expectAnswers((await read(saver)) as Record<string, Tagged>, golden.expected as Record<string, Tagged>);
        expect(reports[0]).toMatchObject({ kind: "restored", fromEmpty: true });
      } finally {
        await saver.close();
      }
    });
  });
}

/**
 * The journal `bytes` with its header naming `dbName`, every other record
 * byte for byte: recovery replays only a journal naming its own database,
 * and the golden's name would collide with the memory-backend golden tests,
 * which may run beside these in the same origin (they read the exact bytes).
 */
function renamed(bytes: Uint8Array, dbName: string): Uint8Array {
  const header = parseJournal(bytes).records[0] as object;
  return joinBytes([frameRecord({ ...header, db: dbName }), bytes.subarray(frameRecord(header).length)]);
}
