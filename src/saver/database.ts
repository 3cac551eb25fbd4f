/**
 * The saver's database: the IndexedDB runner over the saver's schema, with
 * the journal's seam plugged in (recovery before the first transaction,
 * wipe detection, and the crash journal when enabled).
 */
import { Database } from "../idb/database.js";
import { JournalSeam } from "../journal/index.js";
import { SAVER_STORE_NAMES, SAVER_UPGRADES, type SaverSchema } from "./schema.js";
import type { IndexedDBSaverParams } from "./types.js";
import { leaseGate } from "./fresh.js";
import { loadOnce } from "../core/tasks.js";

/** The journal's rules for this saver's rows, needed only after a recovery with a journal. */
const adapterModule = loadOnce(() => import("./journal-adapter.js"));

/** The database and its journal seam. @internal */
export interface SaverDatabase {
  db: Database<SaverSchema>;
  journal: JournalSeam;
}

/** Opens nothing yet: builds the lazily opened database of a saver. @internal */
export function createSaverDatabase(params: IndexedDBSaverParams): SaverDatabase {
  const name = params.dbName ?? "langgraph";
  // Every write holds the lease: savers that answer reads from memory rely on it (fresh-cache.ts). So does a
  // recovery's replay, which writes before this saver's first transaction.
  const beforeWrite = leaseGate(name, params.freshReads !== false, (): object => db);
  const journal = new JournalSeam({
    name,
    stores: SAVER_STORE_NAMES,
    journal: params.journal,
    onWipe: params.onWipe,
    onRecovery: params.onRecovery,
    // Needed only after a recovery with a journal: loaded then.
    rules: async () => (await adapterModule()).journalRules,
    beforeWrite,
  });
  const db = new Database<SaverSchema>({
    name,
    upgrades: SAVER_UPGRADES,
    indexedDB: params.indexedDB,
    durability: params.durability,
    blockedTimeoutMs: params.blockedTimeoutMs,
    seam: journal,
    beforeWrite,
  });
  journal.attach(() => db.rawConnection());
  return { db, journal };
}
