/**
 * The text of failures an app rarely meets, loaded as one chunk by the first
 * of them instead of shipped up front (or as a chunk each: every chunk costs
 * a request and its own gzip overhead): a payload msgpackr must not read, a
 * value MsgpackSerializer cannot encode, a key changed in another tab, a
 * database in a newer row format. Messages only: the callers build the
 * errors. A lazy chunk that imports modules of the up-front code (here
 * core/errors.ts) made Rolldown split them into an up-front file of their
 * own (docs/benchmarks.md, "Bundle").
 */
export { refusalMessage } from "./msgpack/refusal.js";
export { encodeErrorMessage } from "./msgpack/explain.js";
export { keyChangedMessage } from "./key-changed.js";

/**
 * Why database `dbName`, whose rows are in format `format`, is refused by
 * this version, which reads format `reads` (saver/schema.ts `isNewerFormat`).
 * @internal
 */
export function newerFormatMessage(dbName: string, format: number, reads: number): string {
  return `IndexedDB database "${dbName}" holds checkpoints in row format ${format}, written by a newer version of langgraph-checkpoint-indexeddb; this one reads format ${reads}. Upgrade the package: nothing was read or written.`;
}
