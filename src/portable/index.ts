/**
 * Thread export, import and copy between any two `BaseCheckpointSaver`s, in
 * a versioned, self-describing binary format (docs/export-format.md).
 *
 * What lives here: the file format (format.ts), its option/result types and
 * errors, export, import (whole-file validation before the first put) and
 * copy. It uses only BaseCheckpointSaver's public API: it never imports
 * saver/, and may import serde/ and core/.
 */
export { exportThread, exportThreadStream } from "./export.js";
export { importThread } from "./import.js";
export { validateThreadExport, readThreadExportHeader } from "./validate.js";
export { copyThreads } from "./copy.js";
export { ThreadFileError, ThreadExportError, ThreadImportError } from "./errors.js";
export {
  THREAD_EXPORT_FORMAT,
  THREAD_EXPORT_VERSION,
  THREAD_EXPORT_MEDIA_TYPE,
  THREAD_EXPORT_EXTENSION,
  type ThreadExportHeader,
  type ThreadExportCounts,
  type ThreadExportTrailer,
  type BlobRecord,
  type CheckpointRecord,
  type TaskPathsRecord,
} from "./format.js";
export type {
  ThreadExport,
  ThreadExportInput,
  ThreadTransferProgress,
  ExportThreadOptions,
  IfThreadExists,
  ImportThreadOptions,
  ImportThreadResult,
  CopyThreadsOptions,
  CopyThreadsProgress,
  CopyThreadsResult,
} from "./options.js";
