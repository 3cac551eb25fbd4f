/**
 * The eager side of answers from memory (fresh-cache.ts) and of the write
 * lease (write-lease.ts): the gate every write of a saver's database passes,
 * and where the saver's functions find the cache. The lease is taken by
 * every write; the cache is switched on by the first write of a saver that
 * answers from memory (until a saver holds the lease nothing can be proven
 * fresh, so until then there is nothing to keep). Both load with the saver:
 * every chat writes before its first answer, and the cache as a chunk of its
 * own cost a second request and about 1 KB gzip more than inside the saver's.
 */
import { WriteLease, leaseOf, registerLease, type LeaseRecord } from "./write-lease.js";
import {
  answerOf,
  closeFresh,
  forgetFailed,
  forgetPut,
  freshLatest,
  freshList,
  keepPage,
  keepPut,
  keepWrites,
  noteKey,
  noteLive,
  notePut,
  proofToken,
  provePut,
  proveWrites,
  ticket,
  windowParent,
} from "./fresh-cache.js";

// What the saver's modules call, as an object literal rather than `import * as`: a namespace
// object costs the app a getter per export (used or not) and the bundler's runtime to build it.
const cache = {
  answerOf,
  closeFresh,
  forgetFailed,
  forgetPut,
  freshLatest,
  freshList,
  keepPage,
  keepPut,
  keepWrites,
  noteKey,
  noteLive,
  notePut,
  proofToken,
  provePut,
  proveWrites,
  ticket,
  windowParent,
};

type FreshModule = typeof cache;

let loaded: FreshModule | undefined;

/** The cache's functions, once a write has switched them on (`undefined` before: nothing is kept). @internal */
export function freshModule(): FreshModule | undefined {
  return loaded;
}

/**
 * The `beforeWrite` gate of a saver's database (see idb/database.ts): every
 * write holds the lease, and the first one of a saver that answers from
 * memory switches the cache on, so that what it writes can be kept. Where BroadcastChannel is missing no lease can be
 * asked for, so none is taken (and nothing is answered from memory).
 * `db()` is the database the gate guards, known once it is built. @internal
 */
export function leaseGate(dbName: string, freshReads: boolean, db: () => object): () => Promise<void> | undefined {
  let record: LeaseRecord | undefined;
  return () => {
    if (!record) {
      if (!WriteLease.supported) return undefined;
      record = registerLease(db(), dbName, freshReads);
      if (freshReads) loaded = cache;
    }
    return record.lease.ensure();
  };
}

/** Lets a closing saver's lease go (once the cache, if loaded, has dropped what it kept). @internal */
export function closeLease(db: object): void {
  leaseOf(db)?.lease.close();
}
