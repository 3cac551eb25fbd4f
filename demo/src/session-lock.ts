/**
 * The lock changes (lock, new passphrase, unlock for good), step by step:
 * copying threads and memories to another vault's databases, re-sealing the
 * demo's own texts with the lock record in one transaction (the commit), the
 * hand-over to the next session, the old databases' deletes. Functions of
 * the session they are given ({@link MovingSession}); `Session` checks what
 * may change and opens the sessions around them.
 */
import { memoryNamespace } from "./agent.js";
import { DIMS, HashEmbeddings } from "./embeddings.js";
import { messageOf } from "./errors.js";
import { copyThreads, IndexedDBSaver, IndexedDBStore, type EncryptedSerializer } from "./lib.js";
import {
  DATABASES,
  DEFAULT_MODEL_SETTINGS,
  UnsealedTextError,
  databasesOf,
  instructionsPlace,
  loadModelSettings,
  refusing,
  settingRow,
  titlePlace,
  type ModelSettings,
  type Vault,
} from "./settings.js";
import { NO_SYNC, loadSyncSettings, type SyncSettings } from "./sync.js";
import type { DemoDB, LockRow } from "./threads-db.js";
import {
  committedLock,
  eitherVault,
  keyChangeRow,
  unlockChanging,
  withKeyChangeLock,
  type CutChange,
  type LockKey,
} from "./vault-key-change.js";
import { isV1Lock, upgradeV1Lock } from "./vault-upgrade.js";
import { pendingDeletes, prepareLockedOpen, runPendingDeletes, withMigrationLock } from "./vault-migration.js";

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

/** The saver and store of the databases `names`, on `serde` (undefined: plain), as every session opens them. */
export function vaultData(names: { saver: string; store: string }, serde: EncryptedSerializer | undefined): VaultData {
  return {
    saver: new IndexedDBSaver({ dbName: names.saver, serde }),
    store: new IndexedDBStore({
      dbName: names.store,
      serde,
      index: { dims: DIMS, embeddings: new HashEmbeddings(), fields: ["text"] },
    }),
  };
}

/**
 * The model and sync settings `vault` opens, as a session starts with them: one that was not sealed with
 * its key is reported in `problems` (see settings.ts `refusing`) and its default used.
 */
export async function loadSettings(
  db: DemoDB,
  vault: Vault,
  problems: string[],
): Promise<{ model: ModelSettings; sync: SyncSettings }> {
  return {
    model: await refusing(loadModelSettings(db, vault), "model settings", DEFAULT_MODEL_SETTINGS, problems),
    sync: await refusing(loadSyncSettings(db, vault), "sync settings", NO_SYNC, problems),
  };
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
    // A passphrase change's record goes with the lock record it led to (vault-key-change.ts).
    await db.settings.delete("key-change");
    if (toDelete.length > 0) await db.settings.put(pendingDeletes(toDelete));
  });
}

/** A session as a lock change sees it: its databases and its vault. */
export type VaultSession = VaultData & { readonly vault: Vault };

/** What a lock change needs of the session it moves from; `S`, the session type (`Session`). */
export interface MovingSession<S extends VaultSession> extends VaultSession {
  readonly db: DemoDB;
  readonly userId: string;
  /** The model and sync settings as they are at the commit, sealed again for the next vault. */
  settings(): { model: ModelSettings; sync: SyncSettings };
  /** A session on `vault`'s databases, its sync not started. */
  open(vault: Vault): S;
  /**
   * After the commit: this session refuses further lock changes and closes; `next` reads its databases
   * once (binding its serializer to their key records) and starts its sync.
   */
  handOver(next: S): Promise<void>;
}

/**
 * A lock change that committed (the lock record changed, the data is in `session`'s databases) but could
 * not delete the old databases after: the app goes on with `session`; the deletes are retried at the next
 * start (their names stay marked, vault-migration.ts).
 */
export class OldDataLeftError<S extends { readonly vault: Vault }> extends Error {
  override name = "OldDataLeftError";
  constructor(
    readonly session: S,
    cause: unknown,
  ) {
    const [done, left] = session.vault.locked
      ? ["Locked", "the unencrypted copy of your data"]
      : ["The lock is removed", "the encrypted copy of your data"];
    const message = `${done}, but ${left} could not be deleted yet; the app deletes it when it next starts.`;
    super(`${message} ${messageOf(cause)}`, { cause });
  }
}

/**
 * Moves everything to `vault`'s databases (locking, or removing the lock): every thread and memory is
 * copied; then, in one transaction, the thread titles and settings are sealed for `vault`, the lock record
 * is written (or removed) and the old databases are marked for deletion; then `from` hands over to the next
 * session and they are deleted (a tab closed before that finishes them on its next start). A failure of the
 * deletes is an {@link OldDataLeftError} carrying the next session. `check` runs holding the migration lock
 * first: a second call on the same session (a click while the first ran) waited for the first's lock, and
 * must not take the first's new databases for leftovers.
 */
export function moveVault<S extends VaultSession>(
  from: MovingSession<S>,
  vault: Vault,
  row: LockRow | undefined,
  check: () => void,
): Promise<S> {
  const old = Object.values(databasesOf(from.vault));
  const fresh = Object.values(databasesOf(vault));
  return withMigrationLock(async () => {
    check();
    // Leftovers of an earlier migration cut short.
    await runPendingDeletes(from.db, fresh);
    // Until the lock record changes, the copies are leftovers: a tab closed mid-copy has them deleted at
    // the next start, so encrypted databases without a lock record always mean a lost record.
    await from.db.settings.put(pendingDeletes(fresh));
    const next = from.open(vault);
    await copyVaultData(from, next, from.userId);
    await storeTexts(from.db, vault, await openTexts(from.db, from.vault), from.settings(), row, old);
    await from.handOver(next);
    try {
      await runPendingDeletes(from.db);
    } catch (error) {
      throw new OldDataLeftError(next, error);
    }
    return next;
  });
}

/**
 * A new passphrase on the same databases, from the lock `current` to `next`: the change is recorded first
 * (vault-key-change.ts), then the saver and store rotate their data key (`changeKey`: every row re-encrypted
 * under a fresh one), the demo's own sealed texts are sealed again and the lock record gets the new salt and
 * check value, with the record deleted; then `from` hands over to the session on the new vault. Cut after
 * the record was kept, it is a {@link KeyChangeCutError}: the next unlock settles it.
 */
export async function rekeyVault<S extends VaultSession>(
  from: MovingSession<S>,
  current: LockKey,
  next: LockKey,
): Promise<S> {
  // Read the texts with the old key first: after changeKey only the new one opens the databases.
  const texts = await openTexts(from.db, from.vault);
  await from.db.settings.put(await keyChangeRow(current, next));
  try {
    await from.saver.changeKey(next.vault.serde!);
    await from.store.changeKey(next.vault.serde!);
    await storeTexts(from.db, next.vault, texts, from.settings(), await committedLock(next));
  } catch (error) {
    throw new KeyChangeCutError(error);
  }
  const session = from.open(next.vault);
  await from.handOver(session);
  return session;
}

/** A passphrase change that failed after it was recorded: finished, or undone, at the next unlock. */
export class KeyChangeCutError extends Error {
  override name = "KeyChangeCutError";
  constructor(cause: unknown) {
    super(
      `The change stopped halfway (${messageOf(cause)}). Nothing is lost: reload the page, then unlock with the new passphrase to finish the change, or with the current one to undo it.`,
      { cause },
    );
  }
}

/**
 * Settles a passphrase change cut short (vault-key-change.ts) toward `cut.proved`, the lock whose passphrase
 * was just typed, in the change's order: each database brought to its key (`changeKey` from the other key
 * resumes a database already on it: its rotation is finished, it is not re-wrapped), the texts (opened with
 * either key) sealed again, and the lock record written with the change's record deleted, in one
 * transaction. Returns what the user is told.
 */
export async function settleKeyChange(db: DemoDB, { proved, other, finishes }: CutChange): Promise<string[]> {
  // The databases must exist (opening would make empty ones); leftovers of a lock change go first.
  await prepareLockedOpen(db);
  const target = proved.vault.serde!;
  const data = vaultData(DATABASES.locked, other.vault.serde);
  try {
    await data.saver.changeKey(target);
    await data.store.changeKey(target);
  } finally {
    await Promise.all([data.saver.close(), data.store.close()]);
  }
  const either = eitherVault(proved.vault, other.vault);
  const problems: string[] = [];
  const settings = await loadSettings(db, either, problems);
  await storeTexts(db, proved.vault, await openTexts(db, either), settings, await committedLock(proved));
  problems.push(
    `A passphrase change did not finish (the page was closed, or a write failed). Nothing was lost: it is ${finishes ? "finished" : "undone"} now, and the passphrase you just entered is the one that opens the app.`,
  );
  return problems;
}

/**
 * The lock screen's unlock: the vault `passphrase` opens (WrongPassphraseError when none), and what the
 * user is told. A lock of the first format is upgraded in place (vault-upgrade.ts); past it, the stored lock
 * record is used, not `lock` (the row the screen was drawn for), and a passphrase change cut short is
 * settled first (vault-key-change.ts).
 */
export async function unlockVault(
  db: DemoDB,
  lock: LockRow,
  passphrase: string,
): Promise<{ vault: Vault; problems: string[] }> {
  if (isV1Lock(lock)) return upgradeV1Lock(db, lock, passphrase);
  // Not beside a change running in another tab: it would be taken for one cut short.
  return withKeyChangeLock(async () => {
    // The lock record as it is now: a screen drawn before another tab's change holds the row before it,
    // whose passphrase would take a later change's record for a stale one, and delete it.
    const current = await db.lock();
    if (!current) throw new Error("The lock record is missing: reload the page.");
    const { vault, cut } = await unlockChanging(db, current, passphrase);
    return { vault, problems: cut ? await settleKeyChange(db, cut) : [] };
  });
}
