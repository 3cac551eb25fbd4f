/**
 * Forgetting a database's traces outside IndexedDB: its wipe marker and its
 * journal (OPFS, or this process's memory journal). Deleting the database
 * alone leaves both behind, and the next saver on that name then finds a
 * database "recreated empty after holding data" and reports it wiped (or,
 * with `onWipe: "throw"`, fails every call), or restores the deleted rows
 * from the journal.
 */
import { forgetMemoryJournal } from "./memory-backend.js";
import { JOURNAL_DIRECTORY, journalFiles } from "./opfs-backend.js";
import { forgetMemoryMarker, markerName, markerWritesSettled } from "./wipe-marker.js";

/** What {@link forgetDatabaseTraces} removed. */
export interface ForgottenTraces {
  /** The wipe marker was there (OPFS file, `localStorage` entry, or in memory) and is gone. */
  marker: boolean;
  /** Journal files removed (a memory journal counts as one). */
  journalFiles: number;
}

/**
 * Removes the wipe marker and the journal (OPFS or memory) of `dbName`. Call
 * it once the database itself is deleted. A journal still held open by a saver (its
 * worker owns the files) cannot be removed: that is an error naming it, since
 * the journal would otherwise bring the deleted rows back.
 */
export async function forgetDatabaseTraces(dbName: string): Promise<ForgottenTraces> {
  // A saver of this realm still writing the marker (its first commit's, in the background, not closed
  // yet): removed before that write lands, the marker would come back.
  await markerWritesSettled(dbName);
  // Where there is neither OPFS nor localStorage (Node), the marker lives in this process's memory.
  // A memory journal outlives saver instances as a file would: left here, the next saver restored the deleted rows.
  const forgotten: ForgottenTraces = {
    marker: forgetMemoryMarker(dbName),
    journalFiles: forgetMemoryJournal(dbName) ? 1 : 0,
  };
  const name = markerName(dbName);
  try {
    const local = (globalThis as { localStorage?: Storage }).localStorage;
    if (local?.getItem(name) !== null && local?.getItem(name) !== undefined) {
      local.removeItem(name);
      forgotten.marker = true;
    }
  } catch {
    // No localStorage here (opaque origin, some workers): no marker there either.
  }
  const storage = (
    globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } }
  ).navigator?.storage;
  if (typeof storage?.getDirectory !== "function") return forgotten;
  let root: FileSystemDirectoryHandle;
  try {
    root = await storage.getDirectory();
  } catch {
    return forgotten; // OPFS refused (some private modes): nothing was written there.
  }
  if (await removeIfPresent(root, name)) forgotten.marker = true;
  let folder: FileSystemDirectoryHandle;
  try {
    folder = await root.getDirectoryHandle(JOURNAL_DIRECTORY);
  } catch {
    return forgotten;
  }
  for (const file of journalFiles(dbName)) {
    if (await removeIfPresent(folder, file)) forgotten.journalFiles++;
  }
  return forgotten;
}

/** Removes `name` from `folder`; false when it was not there. */
async function removeIfPresent(folder: FileSystemDirectoryHandle, name: string): Promise<boolean> {
  try {
    await folder.removeEntry(name);
    return true;
  } catch (error) {
    if (error instanceof DOMException && error.name === "NotFoundError") return false;
    throw new Error(
      `Could not remove ${JSON.stringify(name)} from the Origin Private File System: ${error instanceof Error ? error.message : String(error)}. A saver with journal: "opfs" may still hold it open (in this or another tab): it empties its journal when it sees the database deleted, so nothing deleted comes back; close that saver (or reload the page) and delete again to remove the file.`,
      { cause: error },
    );
  }
}
