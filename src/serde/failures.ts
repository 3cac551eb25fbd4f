/**
 * The messages of failures an app rarely meets, loaded as one chunk by the
 * first of them instead of shipped up front (or as a chunk each: every chunk
 * costs a request and its own gzip overhead): a payload msgpackr must not
 * read, a value MsgpackSerializer cannot encode, a key changed in another
 * tab, a database in a newer row format.
 */
import { IndexedDBCheckpointError } from "../core/errors.js";

export { refusal } from "./msgpack/refusal.js";
export { encodeError } from "./msgpack/explain.js";
export { keyChanged } from "./key-changed.js";

/**
 * The refusal of database `dbName`, whose rows are in format `format` when
 * this version reads format `reads` (saver/schema.ts `isNewerFormat`).
 * @internal
 */
export function newerFormatError(dbName: string, format: number, reads: number): IndexedDBCheckpointError {
  return new IndexedDBCheckpointError(
    `IndexedDB database "${dbName}" holds checkpoints in row format ${format}, written by a newer version of langgraph-checkpoint-indexeddb; this one reads format ${reads}. Upgrade the package: nothing was read or written.`,
  );
}
