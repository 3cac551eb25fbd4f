/**
 * The journal's OPFS backend: two files per database in the Origin Private
 * File System, written by a dedicated worker with `FileSystemSyncAccessHandle`
 * (append, then `flush()`). Compaction writes the new content to the idle
 * file, flushes it, and only then points a small `.active` file at it, so a
 * crash at any moment leaves one complete journal.
 *
 * The sync access handles are exclusive: a second tab of the same app cannot
 * open the journal, and its saver runs without one (reported as
 * `"journal-unavailable"`).
 */
import type { JournalBackend } from "./types.js";
import { journalWorkerMain } from "./opfs-worker.js";

/** The OPFS folder holding every journal of this package. */
export const JOURNAL_DIRECTORY = "langgraph-checkpoint-indexeddb";

/** The OPFS files (in {@link JOURNAL_DIRECTORY}) of the journal of `dbName`: its two halves and the pointer. */
export function journalFiles(dbName: string): string[] {
  const base = encodeURIComponent(dbName);
  return [`${base}.a.journal`, `${base}.b.journal`, `${base}.active`];
}

let workerUrl: string | undefined;

/** True where the OPFS journal can work: a worker with OPFS. */
export function opfsSupported(): boolean {
  const nav = (globalThis as { navigator?: { storage?: { getDirectory?: unknown } } }).navigator;
  return (
    typeof Worker !== "undefined" && typeof nav?.storage?.getDirectory === "function" && typeof Blob !== "undefined"
  );
}

interface Pending {
  resolve(bytes: Uint8Array | undefined): void;
  reject(error: unknown): void;
}

/** A journal in OPFS, through its own dedicated worker. */
export class OpfsJournalBackend implements JournalBackend {
  readonly #base: string;
  /** `.a`, `.b` and the pointer (see {@link journalFiles}). */
  readonly #files: string[];
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  /** Which of the two files is current (0: `.a`, 1: `.b`) and its generation. */
  #active = 0;
  #generation = 0;

  constructor(dbName: string) {
    this.#base = encodeURIComponent(dbName);
    this.#files = journalFiles(dbName);
  }

  #file(which: number): string {
    return this.#files[which]!;
  }

  #pointer(): string {
    return this.#files[2]!;
  }

  #call(
    op: string,
    file: string,
    extra: { bytes?: Uint8Array; length?: number } = {},
  ): Promise<Uint8Array | undefined> {
    if (!this.#worker) {
      if (!opfsSupported())
        return Promise.reject(new Error("The OPFS journal needs Worker and navigator.storage.getDirectory."));
      workerUrl ??= URL.createObjectURL(new Blob([`(${journalWorkerMain.toString()})()`], { type: "text/javascript" }));
      const worker = new Worker(workerUrl, { name: `journal:${this.#base}` });
      worker.onmessage = (
        event: MessageEvent<{ id: number; bytes?: Uint8Array; error?: { name: string; message: string } }>,
      ) => {
        const { id, bytes, error } = event.data;
        const pending = this.#pending.get(id);
        if (!pending) return;
        this.#pending.delete(id);
        if (error)
          pending.reject(
            Object.assign(new Error(`OPFS journal: ${error.name}: ${error.message}`), { name: error.name }),
          );
        else pending.resolve(bytes);
      };
      worker.onerror = (event) => {
        const error = new Error(`OPFS journal worker failed: ${event.message}`);
        for (const pending of this.#pending.values()) pending.reject(error);
        this.#pending.clear();
      };
      this.#worker = worker;
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker!.postMessage({ id, op, dir: JOURNAL_DIRECTORY, file, ...extra });
    });
  }

  async open(): Promise<Uint8Array> {
    const pointer = (await this.#call("read", this.#pointer())) ?? new Uint8Array(0);
    const parsed = parsePointer(pointer);
    this.#active = parsed?.which ?? 0;
    this.#generation = parsed?.generation ?? 0;
    // Take both handles now, so another tab fails here and not mid-run.
    await this.#call("read", this.#file(1 - this.#active));
    return (await this.#call("read", this.#file(this.#active))) ?? new Uint8Array(0);
  }

  async truncate(length: number): Promise<void> {
    await this.#call("truncate", this.#file(this.#active), { length });
  }

  async append(bytes: Uint8Array): Promise<void> {
    await this.#call("append", this.#file(this.#active), { bytes });
  }

  async replace(bytes: Uint8Array): Promise<void> {
    const next = 1 - this.#active;
    await this.#call("write", this.#file(next), { bytes });
    const generation = this.#generation + 1;
    await this.#call("overwrite", this.#pointer(), { bytes: pointerBytes(next, generation) });
    this.#active = next;
    this.#generation = generation;
    // The old file is no longer read; empty it to give the space back.
    await this.#call("truncate", this.#file(1 - next), { length: 0 });
  }

  async close(): Promise<void> {
    if (!this.#worker) return;
    try {
      await this.#call("close", "");
    } finally {
      this.#worker.terminate();
      this.#worker = undefined;
    }
  }
}

/** `[which u32][generation u32][check u32]`, twice (a torn write spoils at most one copy). */
function pointerBytes(which: number, generation: number): Uint8Array {
  const out = new Uint8Array(24);
  const view = new DataView(out.buffer);
  for (const at of [0, 12]) {
    view.setUint32(at, which, true);
    view.setUint32(at + 4, generation, true);
    view.setUint32(at + 8, (which ^ generation ^ 0x5a17c0de) >>> 0, true);
  }
  return out;
}

function parsePointer(bytes: Uint8Array): { which: number; generation: number } | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const at of [0, 12]) {
    if (bytes.length < at + 12) continue;
    const which = view.getUint32(at, true);
    const generation = view.getUint32(at + 4, true);
    if ((which === 0 || which === 1) && view.getUint32(at + 8, true) === (which ^ generation ^ 0x5a17c0de) >>> 0)
      return { which, generation };
  }
  return undefined;
}
