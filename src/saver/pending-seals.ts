/**
 * The puts of a saver whose row is not sealed yet (chain.ts), noted when the
 * put starts, before its first await. An encrypting saver's row hashes its
 * parent's chain; the parent's put remembers that chain only once it reaches
 * its seal, after serializing and encrypting (WebCrypto's promises resolve
 * in no fixed order). A child put that got there first read the parent from
 * IndexedDB, found it not stored yet, and stored its row without a chain: it
 * and its descendants lost the chain's tamper evidence. So a child waits for
 * its parent's seal when that parent's put started before it. Eager (the
 * first encrypted put notes itself before the chain chunk has loaded), and
 * only a Map entry per put.
 */
import type { SaverContext } from "./context.js";
import { checkpointMapKey } from "./keys.js";

interface Pending {
  /** Order of the puts' starts: a put waits only for one that started before it (no cycle can wait). */
  seq: number;
  sealed: Promise<void>;
}

const pending = new WeakMap<SaverContext, Map<string, Pending>>();
let nextSeq = 0;

/** A put's note: its start order, and `done()` once its row is sealed, or the put ended without a seal. */
export interface SealNote {
  readonly seq: number;
  done(): void;
}

/** Notes that a put of row `checkpointId` has started and is not sealed yet (see the module comment). */
export function noteSealing(ctx: SaverContext, threadId: string, checkpointNs: string, checkpointId: string): SealNote {
  let seals = pending.get(ctx);
  if (!seals) pending.set(ctx, (seals = new Map()));
  const key = checkpointMapKey(threadId, checkpointNs, checkpointId);
  let resolve!: () => void;
  const entry: Pending = { seq: nextSeq++, sealed: new Promise<void>((done) => (resolve = done)) };
  seals.set(key, entry);
  return {
    seq: entry.seq,
    done() {
      resolve();
      if (seals.get(key) === entry) seals.delete(key);
    },
  };
}

/**
 * The seal of row `checkpointId` by a put that started before the put
 * numbered `before`, while it is pending; undefined if there is none.
 */
export function pendingSeal(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  checkpointId: string,
  before: number,
): Promise<void> | undefined {
  const entry = pending.get(ctx)?.get(checkpointMapKey(threadId, checkpointNs, checkpointId));
  return entry !== undefined && entry.seq < before ? entry.sealed : undefined;
}
