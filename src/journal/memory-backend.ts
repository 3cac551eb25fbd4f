/**
 * The journal kept in this process's memory: for tests, and where OPFS is
 * missing. It outlives saver instances, as a file would. Loaded only when
 * `journal: "memory"` is chosen (the memory wipe marker is in wipe-marker.ts).
 */

import type { JournalBackend } from "./types.js";
import { joinBytes } from "../core/bytes.js";
import { forgetMemoryMarkers } from "./wipe-marker.js";

/** Journals of the memory backend, by name: they outlive saver instances, as files would. */
const memoryFiles = new Map<string, Uint8Array>();

/** A journal kept in this process's memory: for tests, and where OPFS is missing. */
export class MemoryJournalBackend implements JournalBackend {
  constructor(readonly name: string) {}
  async open(): Promise<Uint8Array> {
    return memoryFiles.get(this.name) ?? new Uint8Array(0);
  }
  async truncate(length: number): Promise<void> {
    memoryFiles.set(this.name, (memoryFiles.get(this.name) ?? new Uint8Array(0)).slice(0, length));
  }
  async append(bytes: Uint8Array): Promise<void> {
    memoryFiles.set(this.name, joinBytes([memoryFiles.get(this.name) ?? new Uint8Array(0), bytes]));
  }
  async replace(bytes: Uint8Array): Promise<void> {
    memoryFiles.set(this.name, bytes.slice());
  }
  async close(): Promise<void> {}
  /** The bytes of a memory journal (tests). */
  static file(name: string): Uint8Array | undefined {
    return memoryFiles.get(name);
  }
  /** Overwrites a memory journal (tests: tear its tail). */
  static setFile(name: string, bytes: Uint8Array | undefined): void {
    if (bytes) memoryFiles.set(name, bytes);
    else memoryFiles.delete(name);
  }
}

/** Forgets the memory journal of `name` (deleteSaverDatabase); true when there was one. */
export function forgetMemoryJournal(name: string): boolean {
  return memoryFiles.delete(name);
}

/** Forgets memory journals and markers (tests). */
export function resetMemoryJournals(): void {
  memoryFiles.clear();
  forgetMemoryMarkers();
}
