/**
 * What a put may take as proven instead of asking IndexedDB in its
 * transaction, and what it may leave unwritten (docs/fresh-reads.md, "Puts
 * without guard reads").
 *
 * A put checks two things in its transaction (put.ts): that the key record
 * still names the key it sealed under, and that its parent checkpoint is
 * stored (else a deleted thread's run may be writing late). It also rewrites
 * its thread's summary row, whose `updated_at` orders `listThreads`. While
 * this saver holds the database's write lease (write-lease.ts) no other
 * saver writes, so what this saver's own committed puts found and wrote
 * stays true, except where its own writes that remove rows or change the
 * key (any write not flagged additive: idb/database.ts `exclusiveMark`)
 * change it. So everything here is kept for one lease epoch, and cleared
 * when the epoch changes, when such a write is pending or has settled, when
 * the connection changes, and on a change notice from another tab.
 *
 * What is kept:
 * - the threads a putWrites found no tombstone of (then a putWrites that
 *   proves the key too skips its guard reads: {@link proveWrites});
 * - the key: a put's transaction read the key record and found it naming
 *   `keyId` (bound to the serializer instance that sealed under it);
 * - per namespace, the row this saver's last put there committed;
 * - per namespace, the newest checkpoint id stored (read once in a put's
 *   transaction, then moved up by this saver's own puts);
 * - the thread whose summary row has the largest `updated_at` of the
 *   database (read once in a put's transaction, then set by each summary
 *   this saver writes with a later time).
 *
 * A root-namespace put whose thread is that thread, whose id is above the
 * namespace's newest, with no other put of this saver in flight there,
 * leaves the summary as it is: the thread stays first in the `by_updated`
 * order, and `listThreads` reports as its update time the later of the
 * summary's and its newest root checkpoint's `created_at`, which is this
 * put's (threads.ts). Nothing is lost if the page dies: the checkpoint row
 * holds the time. A put whose stamp runs ahead of `Date.now()` (two within a
 * millisecond) writes the summary all the same (put.ts): another saver's
 * summary written after it may carry a lower time than that stamp, and must
 * not come between the thread's summary and its checkpoint.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { leaseOf } from "./write-lease.js";
import { namespaceMapKey } from "./keys.js";
import { isAbsent, type CheckpointRow, type ValueKey } from "../rows/shapes.js";

interface ProofState {
  /** The lease epoch, exclusive-write mark and connection everything below was learned under. */
  epoch: number;
  mark: number | undefined;
  connection: number;
  key: { serde: SerializerProtocol; keyId: string | undefined } | undefined;
  /** By namespace: the row this saver's last put there committed. */
  stored: Map<string, CheckpointRow>;
  /** Threads a putWrites of this saver found no tombstone of. */
  live: Map<string, true>;
  /** By namespace: the newest checkpoint id stored. */
  newest: Map<string, string>;
  /** The thread whose summary is first by `updated_at`, and that time; `top` undefined: not known. */
  top: string | undefined;
  topTime: number | undefined;
  /** Summary writes whose transactions were created, and the last one noted (see {@link notePut}). */
  summaries: number;
  noted: number;
}

/**
 * What a put saw as it started, to hand back with what it learned (see
 * {@link proofToken}): the state it may add to. Told by identity, not by
 * its epoch, mark and connection: a remote notice clears the state, and
 * the next one is made with the same numbers, which a put that read the
 * database before the notice must not add to.
 */
export interface ProofToken {
  readonly state: object;
}

/** At most this many namespaces are remembered; the oldest go first. */
const MAX_NAMESPACES = 64;

const states = new WeakMap<SaverContext, ProofState>();

/** The state of `ctx`, cleared if anything changed since it was learned; undefined when nothing can be proven now. */
function current(ctx: SaverContext): ProofState | undefined {
  const record = leaseOf(ctx.db);
  const lease = record?.lease;
  // `freshReads: false` trusts nothing kept in memory: the guard reads are made and the summary written.
  if (!record?.freshReads || !lease?.held) return undefined;
  const mark = ctx.db.exclusiveMark;
  let state = states.get(ctx);
  if (!state) {
    states.set(ctx, (state = blank(lease.epoch, mark, ctx.db.connectionMark)));
    // A notice from another tab: it wrote without the lease (a build without it). Trust nothing.
    ctx.feed.subscribe((change) => {
      if (change.remote) states.set(ctx, blank(-1, undefined, -1));
    });
  }
  if (state.epoch !== lease.epoch || state.mark !== mark || state.connection !== ctx.db.connectionMark) {
    states.set(ctx, (state = blank(lease.epoch, mark, ctx.db.connectionMark)));
  }
  return mark === undefined ? undefined : state;
}

function blank(epoch: number, mark: number | undefined, connection: number): ProofState {
  return {
    epoch,
    mark,
    connection,
    key: undefined,
    stored: new Map(),
    live: new Map(),
    newest: new Map(),
    top: undefined,
    topTime: undefined,
    summaries: 0,
    noted: 0,
  };
}

/** What a put sees as it starts; undefined when it can learn nothing (the lease not held, a removal pending). */
export function proofToken(ctx: SaverContext): ProofToken | undefined {
  const state = current(ctx);
  return state && { state };
}

/** The state, if nothing changed since `t` was taken (the lease held throughout, no removal, the same connection, no remote notice). */
function since(ctx: SaverContext, t: ProofToken | undefined): ProofState | undefined {
  const state = t && current(ctx);
  return state !== undefined && state === t?.state ? state : undefined;
}

/** What a put about to create its transaction may skip (see {@link provePut}). */
export interface PutProof {
  /** The key record and the parent need not be read. */
  guard: boolean;
  /** The thread's summary row need not be written. */
  summary: boolean;
  /** The reads that would let later puts skip the summary: the namespace's newest id, the first summary. */
  learnNewest: boolean;
  learnTop: boolean;
  /** The number of the summary this put writes, to hand back to {@link notePut}. */
  seq: number | undefined;
}

/**
 * What a put of `row` may skip, decided synchronously where its transaction
 * is created (so a put that writes the thread's summary is counted before
 * any later transaction exists). `windowParent`: the parent's row as the
 * fresh cache keeps it, if it does; `othersInFlight`: another put of this
 * saver to the namespace has started and not settled.
 */
export function provePut(
  ctx: SaverContext,
  serde: SerializerProtocol,
  keyId: string | undefined,
  row: CheckpointRow,
  listed: readonly ValueKey[],
  windowParent: CheckpointRow | undefined,
  othersInFlight: boolean,
): PutProof {
  const { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id, parent_checkpoint_id: parentId } = row;
  const state = current(ctx);
  if (!state) return { guard: false, summary: false, learnNewest: false, learnTop: false, seq: undefined };
  const key = namespaceMapKey(threadId, ns);
  const last = state.stored.get(key);
  const parent = parentId === undefined ? undefined : last?.checkpoint_id === parentId ? last : windowParent;
  const guard =
    state.key?.serde === serde &&
    state.key.keyId === keyId &&
    (parentId === undefined || (parent !== undefined && listed.every(([, , c, v]) => isAbsent(parent, c, v))));
  if (ns !== "") return { guard, summary: false, learnNewest: false, learnTop: false, seq: undefined };
  const newest = state.newest.get(key);
  const summary =
    guard &&
    !othersInFlight &&
    state.top === threadId &&
    state.noted === state.summaries &&
    newest !== undefined &&
    id > newest;
  if (summary) return { guard, summary, learnNewest: false, learnTop: false, seq: undefined };
  // This put writes the thread's summary with a time past every other: no other thread is first after it.
  if (state.top !== threadId) state.top = undefined;
  return {
    guard,
    summary,
    learnNewest: newest === undefined,
    learnTop: state.topTime === undefined,
    seq: ++state.summaries,
  };
}

/**
 * Whether a `putWrites` to `checkpointId` may skip its guard reads (the
 * thread's tombstone copy, the key-id copy: put-writes.ts), decided where
 * its transaction is created. The key is proven as for a put. The
 * tombstone drops writes only to a checkpoint that is not stored
 * (rows/shapes.ts `isDeadCheckpoint`), and only a removal writes one: so
 * the writes are safe when a putWrites of this saver found no tombstone of
 * the thread ({@link noteLive}), or the checkpoint is the row this saver's
 * last put to the namespace committed, or one `inWindow` finds in the fresh
 * cache's kept window, all under the current epoch and mark (no other saver
 * wrote since, and no removal of this one is pending or settled). In a run
 * with async durability the writes of a step usually reach IndexedDB before
 * the put of their checkpoint, so the first of these is the one that holds.
 */
export function proveWrites(
  ctx: SaverContext,
  serde: SerializerProtocol,
  keyId: string | undefined,
  threadId: string,
  checkpointNs: string,
  checkpointId: string,
  inWindow: () => boolean,
): boolean {
  const state = current(ctx);
  if (!state || state.key?.serde !== serde || state.key.keyId !== keyId) return false;
  return (
    state.live.has(threadId) ||
    state.stored.get(namespaceMapKey(threadId, checkpointNs))?.checkpoint_id === checkpointId ||
    inWindow()
  );
}

/** Notes that a putWrites' committed transaction read the thread's tombstone copy and found none. */
export function noteLive(ctx: SaverContext, t: ProofToken | undefined, threadId: string): void {
  const state = since(ctx, t);
  if (state) remember(state.live, threadId, true);
}

/** Notes that a put's committed transaction read the key record and found it naming `keyId`. */
export function noteKey(
  ctx: SaverContext,
  t: ProofToken | undefined,
  serde: SerializerProtocol,
  keyId: string | undefined,
): void {
  const state = since(ctx, t);
  if (state) state.key = { serde, keyId };
}

/**
 * Notes what a put committed: its row; `seq` and `summaryTime`, the number
 * and `updated_at` of the summary it wrote (undefined: none); what its
 * transaction read after its writes, if it did (`newestRead`: the
 * namespace's newest id; `topRead`: the first summary). Anything that
 * changed since `t` forgets the namespace instead. The first summary is
 * taken as known only from the note of the last summary written, so none
 * written later can be first without this saver knowing.
 */
export function notePut(
  ctx: SaverContext,
  t: ProofToken | undefined,
  row: CheckpointRow,
  seq: number | undefined,
  summaryTime: number | undefined,
  newestRead: string | undefined,
  topRead: { threadId: string; time: number } | undefined,
): void {
  const key = namespaceMapKey(row.thread_id, row.checkpoint_ns);
  const state = since(ctx, t);
  if (!state) return forgetPut(ctx, row.thread_id, row.checkpoint_ns);
  remember(state.stored, key, row);
  // Only ever up: notes of puts to one namespace may come in another order than their ids.
  const known = [state.newest.get(key), newestRead].filter((id) => id !== undefined);
  if (known.length > 0) remember(state.newest, key, [...known, row.checkpoint_id].sort().pop()!);
  if (seq === undefined || summaryTime === undefined) return;
  if (seq !== state.summaries) return void (state.top = undefined);
  state.noted = seq;
  if (topRead) [state.top, state.topTime] = [topRead.threadId, topRead.time];
  else if (state.topTime !== undefined && summaryTime > state.topTime) {
    // Later than the first summary known: this one is first now (the times of one saver only grow).
    [state.top, state.topTime] = [row.thread_id, summaryTime];
  } else state.top = undefined;
}

/** Forgets what a put may have changed without this saver knowing what (it failed; it may have committed). */
export function forgetPut(ctx: SaverContext, threadId: string, checkpointNs: string): void {
  const state = states.get(ctx);
  if (!state) return;
  state.stored.delete(namespaceMapKey(threadId, checkpointNs));
  state.newest.delete(namespaceMapKey(threadId, checkpointNs));
  state.top = undefined;
}

/**
 * Forgets everything (the saver closes). A blank state, not none: a new one
 * would subscribe another listener to the feed at each reopen (the feed's
 * channel is reopened by the cache's own listener, fresh-state.ts).
 */
export function closeProofs(ctx: SaverContext): void {
  states.set(ctx, blank(-1, undefined, -1));
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_NAMESPACES) map.delete(map.keys().next().value!);
}
