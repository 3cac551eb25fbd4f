/**
 * The types every module of idb/ shares: a schema step and a transaction.
 * They live apart from the runner (database.ts) so that opening a connection
 * (open.ts) can name them without importing the runner that imports it.
 */
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from "idb";

/**
 * One schema step. Steps run in order inside the `versionchange` transaction;
 * the database version is the number of steps, so a step, once released, is
 * never edited, only followed by a new one.
 */
export type Upgrade<Schema extends DBSchema> = (
  db: IDBPDatabase<Schema>,
  tx: IDBPTransaction<Schema, StoreNames<Schema>[], "versionchange">,
) => void;

/**
 * A read-only or read-write transaction over some stores of `Schema`, as
 * work inside it sees it: its object stores (idb's promise-returning
 * wrappers), nothing else. The runner (database.ts) holds the transaction
 * itself, with one handler of its outcome, not idb's wrapped transaction,
 * whose `done` promise adds and removes three listeners per transaction.
 */
export type Tx<Schema extends DBSchema, Mode extends IDBTransactionMode> = Pick<
  IDBPTransaction<Schema, StoreNames<Schema>[], Mode>,
  "objectStore"
>;
