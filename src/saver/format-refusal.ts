/**
 * The refusal of a database in a newer row format, loaded only when one is
 * met (saver/schema.ts `isNewerFormat`): its message is not worth shipping
 * up front to every app.
 */
import { IndexedDBCheckpointError } from "../core/errors.js";
import { SAVER_FORMAT } from "./schema.js";

/** The error for database `dbName`, whose rows are in format `format`. @internal */
export function newerFormatError(dbName: string, format: number): IndexedDBCheckpointError {
  return new IndexedDBCheckpointError(
    `IndexedDB database "${dbName}" holds checkpoints in row format ${format}, written by a newer version of langgraph-checkpoint-indexeddb; this one reads format ${SAVER_FORMAT}. Upgrade the package: nothing was read or written.`,
  );
}
