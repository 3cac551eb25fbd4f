/**
 * The eager side of answers from memory (fresh-cache.ts) and of the write
 * lease (write-lease.ts): the gate every write of a saver's database passes,
 * and where the saver's functions find the cache. The lease is taken by
 * every write, so it loads with the saver; the cache loads beside the first
 * write (until a saver holds the lease nothing can be proven fresh, so until
 * then there is nothing to keep). A cache that cannot be fetched (a page
 * offline before it was ever loaded, a deploy that removed the chunk) leaves
 * the saver reading IndexedDB as without it: writes never wait for it.
 */
import { WriteLease, leaseOf, registerLease, type LeaseRecord } from "./write-lease.js";

type FreshModule = typeof import("./fresh-cache.js");

let loaded: FreshModule | undefined;
let loading: Promise<void> | undefined;

/** The cache's functions, once a write has loaded them (`undefined` before: nothing is kept). @internal */
export function freshModule(): FreshModule | undefined {
  return loaded;
}

/**
 * The `beforeWrite` gate of a saver's database (see idb/database.ts): every
 * write holds the lease, and the first one of a saver that answers from
 * memory waits for the cache to load (or to fail to), so that what it
 * writes can be kept. Where BroadcastChannel is missing no lease can be
 * asked for, so none is taken (and nothing is answered from memory).
 * `db()` is the database the gate guards, known once it is built. @internal
 */
export function leaseGate(dbName: string, freshReads: boolean, db: () => object): () => Promise<void> | undefined {
  let record: LeaseRecord | undefined;
  return () => {
    if (!record) {
      if (!WriteLease.supported) return undefined;
      record = registerLease(db(), dbName, freshReads);
      // Asked again once settled (idb/database.ts), then it takes the lease.
      if (freshReads && !loaded) return loadCache();
    }
    return record.lease.ensure();
  };
}

/**
 * Loads the cache; settles either way. Called from a promise, so that an
 * import that throws where it is called fails like one that cannot fetch
 * its chunk (Vitest's browser mode wraps import() in a helper that workers
 * lack). Not loaded: this page answers every read from IndexedDB, and a
 * later saver's first write tries again.
 */
function loadCache(): Promise<void> {
  return (loading ??= Promise.resolve()
    .then(() => import("./fresh-cache.js"))
    .then(
      (module) => void (loaded = module),
      () => void (loading = undefined),
    ));
}

/** Lets a closing saver's lease go (once the cache, if loaded, has dropped what it kept). @internal */
export function closeLease(db: object): void {
  leaseOf(db)?.lease.close();
}
