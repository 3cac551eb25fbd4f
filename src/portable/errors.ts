/** The errors of thread files, exports and imports. */
import { IndexedDBCheckpointError, nameErrors } from "../core/errors.js";

// ------------------------------------------------------------------ errors

/**
 * A file that is not a readable `langgraph-thread` export: another format, a
 * newer version, corrupt or truncated bytes, or a record the serializer
 * cannot decode. Thrown before anything is written.
 */
export class ThreadFileError extends IndexedDBCheckpointError {}

/** An export that could not be made: no such thread, or it changed while being read. */
export class ThreadExportError extends IndexedDBCheckpointError {}

/**
 * The import could not write the thread: the target thread already exists
 * (`ifExists: "error"`, nothing written), or a write to the target saver
 * failed or was aborted after the file was validated (or the saver silently
 * dropped a checkpoint). `rolledBack` tells whether the partly written thread
 * was deleted again.
 */
export class ThreadImportError extends IndexedDBCheckpointError {
  /** The target thread. */
  readonly threadId: string;
  /** Checkpoints written before the failure. */
  readonly written: number;
  /** True when the partial thread was removed (it did not exist before, or `ifExists: "replace"`). */
  readonly rolledBack: boolean;
  /** `ifExists: "replace"`: true when the thread it replaced was put back as it was. */
  readonly restored: boolean;
  /**
   * `ifExists: "replace"`: the copy of the thread it replaced (an export file,
   * in the import's serializer) when it was not put back: import it again
   * (under another `targetThreadId` if the thread is taken) or save it, else
   * that thread is lost.
   */
  readonly replaced?: Uint8Array;

  constructor(
    message: string,
    details: {
      threadId: string;
      written: number;
      rolledBack: boolean;
      restored?: boolean;
      replaced?: Uint8Array;
      cause?: unknown;
    },
  ) {
    super(message, { cause: details.cause });
    this.threadId = details.threadId;
    this.written = details.written;
    this.rolledBack = details.rolledBack;
    this.restored = details.restored ?? false;
    if (details.replaced) this.replaced = details.replaced;
  }
}

nameErrors({ ThreadFileError, ThreadExportError, ThreadImportError });
