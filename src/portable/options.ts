/** Option and result types of thread export, import and copy. */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { ThreadExportCounts, ThreadExportHeader } from "./format.js";

// ------------------------------------------------------------------ public types

/** An exported thread: a Blob (the default) or bytes (`as: "bytes"`). */
export type ThreadExport = Blob | Uint8Array;

export type { ThreadExportInput } from "./format.js";

/** Progress of an export or import. */
export interface ThreadTransferProgress {
  /** Checkpoints done so far. */
  checkpoints: number;
  /** Checkpoints in the thread. */
  total: number;
}

/** Options of `exportThread` and `exportThreadStream`. */
export interface ExportThreadOptions {
  /**
   * Encodes the records. Default `MsgpackSerializer`; pass one with your
   * `types` if the state holds app classes. `IndexedDBSaver.exportThread`
   * defaults to the saver's own serializer, so an encrypted saver writes an
   * encrypted file (format version 2, records bound to their place). An
   * `EncryptedSerializer` here always gives such a file.
   */
  serde?: SerializerProtocol;
  /**
   * `IndexedDBSaver.exportThread` only: write the records unencrypted
   * (`MsgpackSerializer`, or `serde`) even when the saver encrypts. The file
   * then holds the whole thread in plaintext: only for a destination that
   * needs it, and where the file is kept safe.
   */
  unencrypted?: boolean;
  /** Called after each checkpoint written, and once with 0 before the first. */
  onProgress?: (progress: ThreadTransferProgress) => void;
  /** The `source` named in the header. Default: the saver's class name. */
  source?: string;
  /** Stops the export; the stream errors with the signal's reason. */
  signal?: AbortSignal;
}

/** What to do when the target thread already has checkpoints. */
export type IfThreadExists = "error" | "replace" | "merge";

/** Options of `importThread`. */
export interface ImportThreadOptions {
  /** Import under this thread id instead of the file's. */
  targetThreadId?: string;
  /**
   * Decodes the records. Default `MsgpackSerializer` (also reads `"json"`
   * records). An encrypted file (format version 2) needs the
   * `EncryptedSerializer` (same passphrase or key) that wrote it.
   */
  serde?: SerializerProtocol;
  /**
   * Refuse files of `"json"` records (`JsonPlusSerializer`'s format, which
   * revives LangChain constructor records from text). An import file is
   * untrusted input, like any upload: set this when files come from outside
   * your app. Default false (JSON files written by other tools import).
   */
  refuseJson?: boolean;
  /**
   * When the target thread already has checkpoints: `"error"` (default, nothing
   * is written), `"replace"` (delete it first; if the import then fails or is
   * stopped, the thread is put back from a copy taken before) or `"merge"`
   * (add to it; a checkpoint with the same id is overwritten).
   */
  ifExists?: IfThreadExists;
  /** Called after each checkpoint written (with its writes), and once with 0 before the first. */
  onProgress?: (progress: ThreadTransferProgress) => void;
  /** Stops the import between two checkpoints; what was written is removed as for any failure. */
  signal?: AbortSignal;
}

/** What `importThread` and `validateThreadExport` report. */
export interface ImportThreadResult extends ThreadExportCounts {
  /** The thread written (or that would be written). */
  threadId: string;
  /** The file's header. */
  header: ThreadExportHeader;
}

/** Options of `copyThreads`. */
export interface CopyThreadsOptions {
  /**
   * Threads to copy. Default: every thread of the source, from its
   * `listThreads()` when it has one (as `IndexedDBSaver`), else from `list({})`.
   */
  threadIds?: string[];
  /** The target thread id of each source thread. Default: the same id. */
  mapThreadId?: (sourceThreadId: string) => string;
  /** As {@link ImportThreadOptions.ifExists}; default `"error"`. */
  ifExists?: IfThreadExists;
  /** Serializer of the intermediate file; see {@link ExportThreadOptions.serde}. */
  serde?: SerializerProtocol;
  /** Called as each thread is written, and when it is done. */
  onProgress?: (progress: CopyThreadsProgress) => void;
  /** Stops between two checkpoints; the thread being copied is removed from the target. */
  signal?: AbortSignal;
}

/** Progress of `copyThreads`. */
export interface CopyThreadsProgress extends ThreadTransferProgress {
  /** The thread being copied (source id). */
  threadId: string;
  /** Threads completely copied so far. */
  threads: number;
  /** Threads to copy. */
  totalThreads: number;
}

/** What `copyThreads` did. */
export interface CopyThreadsResult {
  /** Each copied thread: source id, target id and counts, in copy order. */
  threads: (ThreadExportCounts & { sourceThreadId: string; threadId: string })[];
}
