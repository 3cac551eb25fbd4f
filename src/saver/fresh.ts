/**
 * The eager side of answers from memory (fresh-cache.ts) and of the write
 * lease (write-lease.ts): the gate every write of a saver's database passes,
 * and where the saver's functions find the cache. Both modules load with the
 * first write: until a saver holds the lease nothing can be proven fresh, so
 * until then there is nothing to keep and nothing to load.
 */
import type { LeaseRecord } from "./write-lease.js";

type FreshModule = typeof import("./fresh-cache.js");

let loaded: FreshModule | undefined;
let loading: Promise<FreshModule> | undefined;

/** The cache's functions, once a write has loaded them (`undefined` before: nothing is kept). @internal */
export function freshModule(): FreshModule | undefined {
  return loaded;
}

/**
 * The `beforeWrite` gate of a saver's database (see idb/database.ts): the
 * first write loads the lease and the cache, every write holds the lease.
 * Where BroadcastChannel is missing no lease can be asked for, so none is
 * taken (and nothing is answered from memory). `db()` is the database the
 * gate guards, known once it is built. @internal
 */
export function leaseGate(dbName: string, freshReads: boolean, db: () => object): () => Promise<void> | undefined {
  let record: LeaseRecord | undefined;
  let starting: Promise<void> | undefined;
  return () => {
    if (record) return record.lease.ensure();
    if (typeof BroadcastChannel === "undefined") return undefined;
    return (starting ??= (loading ??= import("./fresh-cache.js")).then((module) => {
      loaded = module;
      record = module.registerLease(db(), dbName, freshReads);
    }));
  };
}
