/**
 * The wipe marker: a small note outside IndexedDB saying "this database has
 * held data", so a database recreated empty (Chromium deletes a corrupted
 * one whole) is told from a new one. Always loaded: it is all the saver
 * needs when the journal is off.
 */
import type { WipeMarker } from "./types.js";

/** Markers kept in this process's memory: they outlive saver instances, as files would. */
const memoryMarkers = new Set<string>();

/** A marker kept in this process's memory (Node, tests). */
export function memoryMarker(name: string): WipeMarker {
  return {
    has: async () => memoryMarkers.has(name),
    set: async () => void memoryMarkers.add(name),
  };
}

/** Forgets the memory marker of `name` (deleteSaverDatabase); true when it was there. */
export function forgetMemoryMarker(name: string): boolean {
  return memoryMarkers.delete(name);
}

/** Forgets every memory marker (tests, through `resetMemoryJournals`). */
export function forgetMemoryMarkers(): void {
  memoryMarkers.clear();
}

/** The marker writes of each database name, chained (see {@link noteMarkerWrite}); never rejects. */
const markerWrites = new Map<string, Promise<unknown>>();

/**
 * Notes a write of `dbName`'s marker: forgetting the database's traces
 * (deleteSaverDatabase) waits for it first, since a write landing after the
 * removal would leave the marker of a database deleted, and the next saver
 * on the name would find it "wiped".
 */
export function noteMarkerWrite(dbName: string, write: Promise<unknown>): void {
  markerWrites.set(dbName, Promise.allSettled([markerWrites.get(dbName), write]));
}

/** Settles once every marker write of `dbName` noted in this realm has. */
export async function markerWritesSettled(dbName: string): Promise<void> {
  await markerWrites.get(dbName);
}

/** The marker's OPFS file name (also its `localStorage` key where there is no OPFS). */
export function markerName(dbName: string): string {
  return `langgraph-idb-${encodeURIComponent(dbName)}.marker`;
}

/**
 * The marker for `dbName` in this environment: a small OPFS file where there
 * is OPFS (it survives Chromium deleting a corrupted IndexedDB), else
 * `localStorage`, else memory.
 */
export function defaultMarker(dbName: string): WipeMarker {
  const fileName = markerName(dbName);
  const storage = (
    globalThis as { navigator?: { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } }
  ).navigator?.storage;
  if (typeof storage?.getDirectory === "function") {
    return {
      async has() {
        try {
          await (await storage.getDirectory!()).getFileHandle(fileName);
          return true;
        } catch {
          return false;
        }
      },
      async set() {
        try {
          await (await storage.getDirectory!()).getFileHandle(fileName, { create: true });
        } catch {
          // No OPFS after all (some private modes): nothing to remember with.
        }
      },
    };
  }
  const local = (() => {
    try {
      return (globalThis as { localStorage?: Storage }).localStorage;
    } catch {
      return undefined;
    }
  })();
  if (local) {
    return {
      has: async () => local.getItem(fileName) !== null,
      set: async () => local.setItem(fileName, String(Date.now())),
    };
  }
  return memoryMarker(dbName);
}
