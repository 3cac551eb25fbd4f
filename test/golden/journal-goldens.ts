/**
 * What the golden tests of databases kept with a journal (row format 1 and
 * its size goldens) share: the plain and encrypted cases, opening a saver on
 * a fresh database loaded from a dump or restored from the journal alone,
 * and removing both after each test.
 */
import { afterEach } from "vitest";
import { IndexedDBSaver, type RecoveryReport } from "../../src/index.js";
import { MemoryJournalBackend } from "../../src/journal.js";
import { EncryptedSerializer } from "../../src/serde/encrypted/index.js";
import { freshDbName } from "../support/databases.js";
import { RAW_KEY, deleteDatabase, fromBase64, loadDatabase, type SaverGolden } from "./shared.js";

/** A saver golden with the journal its saver kept (base64), under the database name that journal records. */
export type JournalGolden = SaverGolden & { journal: string; dbName: string };

/** One golden file with the serializer that wrote it. */
export interface JournalGoldenCase {
  name: string;
  golden: JournalGolden;
  serde: () => Promise<EncryptedSerializer | undefined>;
}

/** The plain (MsgpackSerializer) and encrypted (`EncryptedSerializer.fromRawKey(RAW_KEY)`) cases of two golden files. */
export function journalGoldenCases(plain: unknown, encrypted: unknown): JournalGoldenCase[] {
  return [
    { name: "plain (MsgpackSerializer)", golden: plain as JournalGolden, serde: async () => undefined },
    {
      name: "encrypted (EncryptedSerializer.fromRawKey)",
      golden: encrypted as JournalGolden,
      serde: () => EncryptedSerializer.fromRawKey(RAW_KEY),
    },
  ];
}

/**
 * Openers of savers on golden databases (names starting with `prefix`);
 * every saver is closed and every database and journal removed after each test.
 */
export function journalGoldenSavers(prefix: string) {
  const created: string[] = [];
  const savers: IndexedDBSaver[] = [];
  afterEach(async () => {
    for (const saver of savers.splice(0)) await saver.close();
    for (const name of created.splice(0)) {
      MemoryJournalBackend.setFile(name, undefined);
      await deleteDatabase(indexedDB, name);
    }
  });
  const keep = (saver: IndexedDBSaver) => (savers.push(saver), saver);
  return {
    /** A saver on a fresh database loaded from the golden dump. */
    async open({ golden, serde }: JournalGoldenCase): Promise<IndexedDBSaver> {
      const name = freshDbName(prefix);
      created.push(name);
      await loadDatabase(indexedDB, name, golden.dump);
      return keep(new IndexedDBSaver({ dbName: name, serde: await serde() }));
    },
    /** A saver on an empty database whose memory journal holds the golden's journal. */
    async fromJournal(
      { golden, serde }: JournalGoldenCase,
      onRecovery?: (report: RecoveryReport) => void,
    ): Promise<IndexedDBSaver> {
      // Under the name its journal's header records, as on the disk it came from: a journal naming
      // another database is not replayed.
      const name = golden.dbName;
      await deleteDatabase(indexedDB, name);
      created.push(name);
      MemoryJournalBackend.setFile(name, fromBase64(golden.journal));
      return keep(
        new IndexedDBSaver({
          dbName: name,
          journal: "memory",
          serde: await serde(),
          ...(onRecovery ? { onRecovery } : {}),
        }),
      );
    },
  };
}
