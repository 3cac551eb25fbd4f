/**
 * The data moves behind a lock change (lock, new passphrase, unlock for
 * good): copying threads and memories to another vault's databases, and
 * re-sealing the demo's own texts with the lock record in one transaction.
 * Functions of the databases and vaults they are given; `Session` decides
 * when they run and opens the sessions around them.
 */
import { memoryNamespace } from "./agent.js";
import { copyThreads, type IndexedDBSaver, type IndexedDBStore } from "./lib.js";
import {
  UnsealedTextError,
  instructionsPlace,
  settingRow,
  titlePlace,
  type ModelSettings,
  type Vault,
} from "./settings.js";
import type { SyncSettings } from "./sync.js";
import type { DemoDB, LockRow } from "./threads-db.js";
import { pendingDeletes } from "./vault-migration.js";

/** A thread's title, opened. */
export interface OpenText {
  id: string;
  title: string;
  /** The thread's custom instructions, if it has any. */
  instructions?: string;
}

/** One vault's saver and store. */
export interface VaultData {
  readonly saver: IndexedDBSaver;
  readonly store: IndexedDBStore;
}

/**
 * Copies every thread and the user's memories from one vault's databases to
 * another's; then reads both new databases once, so they exist with their
 * key records before the lock record names them.
 */
export async function copyVaultData(from: VaultData, to: VaultData, userId: string): Promise<void> {
  await copyThreads(from.saver, to.saver, { ifExists: "replace" });
  const namespace = memoryNamespace(userId);
  for (const item of await from.store.search(namespace, { limit: 100_000 }))
    await to.store.put(namespace, item.key, item.value);
  await to.saver.listThreads({ limit: 1, count: false }).next();
  await to.store.search(namespace, { limit: 1 });
}

/** The demo's own texts (thread titles and instructions), opened with `vault`; a refused one is not carried over. */
export async function openTexts(db: DemoDB, vault: Vault): Promise<OpenText[]> {
  const threads = await db.threads.toArray();
  return Promise.all(
    threads.map(async (t) => ({
      id: t.id,
      title: await vault.open(t.title, titlePlace(t.id)).catch((error: unknown) => {
        if (error instanceof UnsealedTextError) return "(unreadable title)";
        throw error;
      }),
      instructions: t.instructions
        ? await vault.open(t.instructions, instructionsPlace(t.id)).catch((error: unknown) => {
            if (error instanceof UnsealedTextError) return undefined;
            throw error;
          })
        : undefined,
    })),
  );
}

/**
 * Seals the titles, instructions and settings with `vault`, and writes (or, with none,
 * deletes) the lock record, with the marker of the databases to delete
 * after it: all in one transaction.
 */
export async function storeTexts(
  db: DemoDB,
  vault: Vault,
  texts: OpenText[],
  settings: { model: ModelSettings; sync: SyncSettings },
  row: LockRow | undefined,
  toDelete: readonly string[] = [],
): Promise<void> {
  // Sealed before the transaction: Dexie commits one that waits on other async work (WebCrypto here).
  const sealed = await Promise.all(
    texts.map(async (t) => ({
      id: t.id,
      title: await vault.seal(t.title, titlePlace(t.id)),
      instructions: t.instructions ? await vault.seal(t.instructions, instructionsPlace(t.id)) : undefined,
    })),
  );
  const model = await settingRow(vault, "model", settings.model);
  const sync = await settingRow(vault, "sync", settings.sync);
  await db.transaction("rw", db.threads, db.settings, async () => {
    for (const t of sealed) await db.threads.update(t.id, { title: t.title, instructions: t.instructions });
    await db.settings.put(model);
    await db.settings.put(sync);
    if (row) await db.settings.put(row);
    else await db.settings.delete("lock");
    if (toDelete.length > 0) await db.settings.put(pendingDeletes(toDelete));
  });
}
