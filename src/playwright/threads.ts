/**
 * Seeding, reading, exporting and clearing threads in a page's database:
 * the Node side of the page API.
 */
import type { Page } from "playwright";
import type { IfThreadExists } from "../portable/index.js";
import { callPage } from "./inject.js";
import { dropStaged, receiveBytes, sendBytes } from "./transfer.js";
import { toPageEncryption, type AppEncryption } from "./encryption.js";
import type { PageDbOptions, PageRestoreResult, PageThreadState, SeededThread } from "./protocol.js";

/** The `dbName` an IndexedDBSaver uses when given none. */
export const DEFAULT_PAGE_DB_NAME = "langgraph";

/** Which database: the `dbName` the app gives its `IndexedDBSaver`, and its encryption. */
export interface PageDatabaseOptions {
  /** Default `"langgraph"`, IndexedDBSaver's default. */
  dbName?: string;
  /**
   * The app's `EncryptedSerializer` settings, when it encrypts: a passphrase
   * with its salt (and rounds), or the raw key. Without them, reading an
   * encrypted database fails saying so.
   */
  encryption?: AppEncryption;
}

/** The database options as the page API takes them. */
export function pageDb(options: PageDatabaseOptions): PageDbOptions {
  const encryption = toPageEncryption(options.encryption);
  const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
  return encryption ? { dbName, encryption } : { dbName };
}

/** Options of {@link seedThread}. */
export interface SeedThreadOptions extends PageDatabaseOptions {
  /** Seed under this thread id instead of the file's. */
  threadId?: string;
  /** When the thread already exists in the page: `"error"` (default), `"replace"` or `"merge"`. */
  ifExists?: IfThreadExists;
}

/** Options of {@link readThreadState}. */
export interface ReadThreadStateOptions extends PageDatabaseOptions {
  /** Read a subgraph's namespace instead of the root graph (`""`). */
  checkpointNs?: string;
  /** Keep LangGraph's internal channels (`__start__`, `branch:to:…`). Default false. */
  internal?: boolean;
  /**
   * Channels to rebuild from their write history when absent from the
   * checkpoint. Delta channels are found by themselves (the loop's
   * `counters_since_delta_snapshot`, or a `DeltaSnapshot` seed); name them here
   * if a thread has none of those yet.
   */
  deltaChannels?: string[];
}

/** Options of {@link clearThreads}. */
export interface ClearThreadsOptions extends PageDatabaseOptions {
  /** Only these threads. Default: every thread in the database. */
  threadIds?: string[];
  /**
   * Delete the whole database instead (`indexedDB.deleteDatabase`), with its
   * wipe marker and OPFS journal, so that the app's next open finds a new
   * database and reports nothing "wiped". The app's open connection must
   * close on `versionchange`, as IndexedDBSaver's does.
   */
  deleteDatabase?: boolean;
}

/** An exported thread, or the path of a file holding one. */
export type ThreadFileInput = Uint8Array | ArrayBuffer | Blob | string;

/** The file's bytes (a path is read from disk). */
export async function fileBytes(file: ThreadFileInput): Promise<Uint8Array> {
  if (typeof file === "string") {
    const fs = (await import("node:fs/promises" as string)) as { readFile(path: string): Promise<Uint8Array> };
    return new Uint8Array(await fs.readFile(file));
  }
  if (file instanceof Uint8Array) return file;
  if (file instanceof ArrayBuffer) return new Uint8Array(file);
  return new Uint8Array(await file.arrayBuffer());
}

/**
 * Imports an exported thread (from `exportThread`, {@link exportThreadFromPage},
 * or a saved `.lgthread` file) into the page's IndexedDBSaver database.
 *
 * @param page A Playwright page at the app's origin.
 * @param file The export as bytes or a Blob, or a file path.
 * @returns The thread id written and the counts.
 */
export async function seedThread(
  page: Page,
  file: ThreadFileInput,
  options: SeedThreadOptions = {},
): Promise<SeededThread> {
  const staged = await sendBytes(page, "seedThread", await fileBytes(file));
  return callPage(page, "seedThread", "seed", staged, {
    ...pageDb(options),
    threadId: options.threadId,
    ifExists: options.ifExists,
  });
}

/**
 * The latest checkpoint of a thread in the page, as JSON-able data: channel
 * values (delta channels rebuilt), metadata, pending writes; or `undefined`
 * when the thread has no checkpoint there. A database the page does not have
 * is an error that lists the ones it has (a wrong `dbName`), not an empty answer.
 */
export async function readThreadState(
  page: Page,
  threadId: string,
  options: ReadThreadStateOptions & Pick<PageDbOptions, "blockedTimeoutMs"> = {},
): Promise<PageThreadState | undefined> {
  const state = await callPage(page, "readThreadState", "read", threadId, {
    ...pageDb(options),
    blockedTimeoutMs: options.blockedTimeoutMs,
    checkpointNs: options.checkpointNs,
    internal: options.internal,
    deltaChannels: options.deltaChannels,
  });
  return state ?? undefined;
}

/**
 * A thread of the page's database as an `.lgthread` export (the bytes
 * `saver.exportThread` gives): record a conversation once through the app,
 * save the bytes as a fixture, and {@link seedThread} it in later tests.
 */
export async function exportThreadFromPage(
  page: Page,
  threadId: string,
  options: PageDatabaseOptions = {},
): Promise<Uint8Array> {
  const staged = await callPage(page, "exportThreadFromPage", "exportThread", threadId, pageDb(options));
  return receiveBytes(page, "exportThreadFromPage", staged);
}

/**
 * Deletes threads from the page's database (every thread by default), or the
 * whole database with its wipe marker and journal (`deleteDatabase: true`).
 * A database the page does not have is an error that lists the ones it has,
 * except with `deleteDatabase`: its wipe marker may outlive it (the app
 * deleted it), and is removed.
 *
 * @returns The thread ids deleted (empty when the database was deleted).
 */
export async function clearThreads(page: Page, options: ClearThreadsOptions = {}): Promise<string[]> {
  const result = await callPage(page, "clearThreads", "clear", {
    ...pageDb(options),
    threadIds: options.threadIds,
    deleteDatabase: options.deleteDatabase,
  });
  return result.threadIds;
}

/**
 * Every thread of the page's database, exported (the fixture's `snapshot()`);
 * empty when the database does not exist.
 */
export async function snapshotThreads(page: Page, options: PageDatabaseOptions = {}): Promise<Map<string, Uint8Array>> {
  const db = pageDb(options);
  const threads = new Map<string, Uint8Array>();
  const exists = await page.evaluate(
    async (name) => (await indexedDB.databases()).some((database) => database.name === name),
    db.dbName,
  );
  if (!exists) return threads;
  for (const threadId of await callPage(page, "snapshot", "threads", db)) {
    threads.set(threadId, await exportThreadFromPage(page, threadId, options));
  }
  return threads;
}

/**
 * Makes the page's database hold exactly these threads (the fixture's
 * `restore()`). Each file reaches the page in bounded pieces: in one
 * `page.evaluate`, two threads of ~50 MB crashed the page.
 */
export async function restoreThreads(
  page: Page,
  threads: ReadonlyMap<string, Uint8Array>,
  options: PageDatabaseOptions = {},
): Promise<PageRestoreResult> {
  const files: [string, string][] = [];
  try {
    for (const [threadId, file] of threads) files.push([threadId, await sendBytes(page, "restore", file)]);
  } catch (error) {
    await dropStaged(
      page,
      "restore",
      files.map(([, id]) => id),
    );
    throw error;
  }
  return callPage(page, "restore", "restore", files, pageDb(options));
}
