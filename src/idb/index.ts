/**
 * idb/: the only code that opens IndexedDB connections and transactions.
 * `Database` (lazy open, blocked timeout, versionchange, read/write runner and
 * the declared `DatabaseSeam`), the request helpers every observed write goes
 * through, and the group-commit `WriteBatcher`. It imports only core/.
 */
export * from "./database.js";
export * from "./requests.js";
export * from "./batch.js";
