/**
 * Latest checkpoints and `list` pages answered from memory, when provably fresh.
 *
 * What is kept: per namespace, a window of its newest checkpoints (up to
 * {@link MAX_KEPT_ROWS}), each as the stored rows a read would return (the
 * checkpoint row, its channel values' blobs, its pending writes), newest
 * first, and whether the window reaches the namespace's oldest checkpoint.
 * The window is always the namespace's newest checkpoints without a gap:
 * every stored checkpoint with an id at or above the window's oldest is in
 * it. A read of the latest keeps what it read (a window of one; a read that
 * finds the namespace empty keeps an empty, complete window); `list` of one
 * namespace keeps the pages it read from the newest on, and extends the
 * window with each older page that starts where the window ends; this
 * saver's own `put` and `putWrites` update it once their transaction has
 * committed. `getTuple` of the latest answers from the window's first
 * checkpoint; `list` of one namespace answers from the window as far as it
 * reaches (list.ts), then reads on from where it ends. A hit decodes copies
 * of the kept bytes (or the bytes themselves, for a serializer that only
 * reads them: fresh-rows.ts), so each caller gets objects of its own and
 * cannot change what is kept.
 *
 * Why a hit cannot be stale: an entry is served only while this saver holds
 * its database's write lease (write-lease.ts), and has held it without a
 * break since the entry's rows were read or written. While it holds the
 * lease no other saver (tab, worker, another saver of this page) can create
 * a write transaction on the database, and losing it first drops every
 * entry, synchronously, before the saver asking for it can write. What this
 * saver itself writes is accounted for:
 * - its put and putWrites update the entry after commit (never on an aborted
 *   transaction), by the rules the transaction applied (a checkpoint newer
 *   than the window's newest goes on top, carrying the blobs of the channels
 *   it did not change from the one below; a special write replaces, a
 *   regular one is kept only if its `(task_id, idx)` is new, on whichever
 *   kept checkpoint it names); when an update cannot be proven (the lease
 *   was not held throughout, something was dropped meanwhile, a value is
 *   unknown, a put of an id at or below the window's newest), the
 *   namespace's entry is dropped instead;
 * - every other write of the saver (delete, copy, prune, deleteForRuns,
 *   sync's apply) announces itself on the change feed before it resolves,
 *   which drops the thread's entries; a key change binds a new serializer,
 *   and entries are served only to the serializer that kept them;
 * - a read keeps what it read only if no write of this saver to that
 *   namespace started, and nothing was dropped, while it ran;
 * - a connection that closes or reopens (another tab's upgrade, a restore,
 *   `close()`) drops everything.
 * Writes stored for a checkpoint before its put (a graph with async
 * durability) are remembered by id, so that put's entry carries them; a put
 * whose id received writes this saver cannot account for fills nothing.
 *
 * Bounds: {@link MAX_ENTRIES} namespaces (least recently used go first),
 * {@link MAX_BYTES} of stored bytes in all, {@link MAX_KEPT_ROWS}
 * checkpoints and {@link MAX_ENTRY_BYTES} per namespace (the oldest of its
 * window go first, and the window no longer reaches the namespace's start).
 * `freshReads: false` turns it off (the lease is still taken for writes:
 * other savers rely on it). Thread-wide and cross-thread `list` always read.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { leaseOf } from "./write-lease.js";
import type { RawTuple } from "../rows/codec.js";
import { isAbsent, type BlobRow, type CheckpointRow, type WriteRow } from "../rows/shapes.js";
import { answerOf, copyBlob, copyRaw, copyRow, mergeWrites } from "./fresh-rows.js";
import { keepsInPlace } from "../serde/in-place.js";
import { closeProofs } from "./put-proof.js";
import { checkpointMapKey, namespaceMapKey } from "./keys.js";
import {
  dropAll,
  dropNamespace,
  keep,
  remember,
  servable,
  stateOf,
  states,
  touch,
  valid,
  type FreshTicket,
} from "./fresh-state.js";

export { MAX_BYTES, MAX_ENTRIES, MAX_ENTRY_BYTES, MAX_KEPT_ROWS, type FreshTicket } from "./fresh-state.js";

/**
 * What a read or a write of `(threadId, checkpointNs)` sees as it starts, to
 * hand back with what it read or wrote; `undefined` when nothing it returns
 * could be kept (the lease is not held). A write marks the namespace touched.
 */
export function ticket(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  write: boolean,
): FreshTicket | undefined {
  const state = stateOf(ctx);
  const lease = leaseOf(ctx.db)?.lease;
  if (!state) return undefined;
  if (write) touch(state, namespaceMapKey(threadId, checkpointNs));
  if (!lease?.held) return undefined;
  return { generation: state.generation, epoch: lease.epoch, connection: state.connection, clock: state.clock };
}

/**
 * The row of `parentId` in its namespace's kept window, if provably current
 * and kept for `serde`: a put's parent proven stored (put-proof.ts).
 */
export function windowParent(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  serde: SerializerProtocol,
  parentId: string,
): CheckpointRow | undefined {
  return servable(ctx, threadId, checkpointNs, serde)?.rows.find((raw) => raw.row.checkpoint_id === parentId)?.row;
}

/** The kept rows of a namespace's latest checkpoint (as {@link answerOf} gives them), if provably current and kept for `serde`. */
export function freshLatest(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  serde: SerializerProtocol,
): RawTuple | undefined {
  const newest = servable(ctx, threadId, checkpointNs, serde)?.rows[0];
  return newest && answerOf(newest, serde);
}

/** What a namespace's kept window answers of a `list`: its rows (kept ones: decode copies), and where to read on. */
export interface WindowAnswer {
  /** Newest first; never changed in place (what is kept changes by replacing rows), so they may be held across awaits. */
  page: readonly RawTuple[];
  /** Read on from the database below this id; `undefined`: the window answered everything. */
  readFrom: string | undefined;
}

/**
 * The part of a `list` of one namespace (checkpoints older than `beforeId`;
 * not one by `onlyId`, which is read) that its window answers, if provably current and kept
 * for `serde`: every stored checkpoint at or above the window's oldest is in
 * the window, and a complete window holds them all. `undefined` when it
 * answers nothing (the database is read as without it).
 */
export function freshList(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  serde: SerializerProtocol,
  beforeId: string | undefined,
  onlyId: string | undefined,
): WindowAnswer | undefined {
  // One checkpoint by id is getTuple's business: read.
  const entry = onlyId === undefined ? servable(ctx, threadId, checkpointNs, serde) : undefined;
  if (!entry) return undefined;
  const { rows, complete } = entry;
  const oldest = rows[rows.length - 1]?.row.checkpoint_id;
  const page = beforeId === undefined ? rows : rows.filter((raw) => raw.row.checkpoint_id < beforeId);
  if (complete) return { page, readFrom: undefined };
  // Below the window (or below `before`, if lower) only the database knows.
  return oldest ? { page, readFrom: beforeId && beforeId < oldest ? beforeId : oldest } : undefined;
}

export { answerOf } from "./fresh-rows.js";
export { proofToken, provePut, proveWrites, noteKey, noteLive, notePut, forgetPut } from "./put-proof.js";

/**
 * Keeps a page of a namespace's checkpoints that one read transaction found,
 * newest first, if nothing this saver wrote or dropped overlapped the read:
 * with `upperId` undefined, the namespace's newest (an empty page: none
 * stored); otherwise those just below `upperId`, which extend the window only
 * if it ends at `upperId`. `complete`: nothing older is stored.
 */
export function keepPage(
  ctx: SaverContext,
  t: FreshTicket | undefined,
  serde: SerializerProtocol,
  threadId: string,
  ns: string,
  page: readonly RawTuple[],
  upperId: string | undefined,
  complete: boolean,
): void {
  const state = states.get(ctx);
  // A read while the lease was idle keeps nothing, but takes the lease back if no one holds it, so the next
  // keeps. Asked once the read is done: beside it, the lock request made that read 1-1.5 ms slower.
  const record = leaseOf(ctx.db);
  if (!t && record?.freshReads) record.lease.takeIfFree();
  if (!state || !valid(ctx, state, t)) return;
  const key = namespaceMapKey(threadId, ns);
  if ((state.touched.get(key) ?? 0) > t.clock) return;
  const kept = page.map((raw) => copyRaw(raw));
  if (upperId === undefined) return keep(state, key, { rows: kept, complete, serde, bytes: 0 });
  const entry = state.entries.get(key);
  const oldest = entry?.rows[entry.rows.length - 1];
  if (!entry || entry.serde !== serde || entry.complete || oldest?.row.checkpoint_id !== upperId) return;
  keep(state, key, { ...entry, rows: [...entry.rows, ...kept], complete });
}

/**
 * Updates the namespace's entry after this saver's put committed: `written`
 * holds its row, the blobs it stored and the serializer that sealed them
 * (undefined: the put was rolled back as a late write). Drops the entry
 * when the update cannot be proven.
 */
export function keepPut(
  ctx: SaverContext,
  t: FreshTicket | undefined,
  written: { serde: SerializerProtocol; row: CheckpointRow; blobs: BlobRow[] } | undefined,
  threadId: string,
  ns: string,
): void {
  const state = states.get(ctx);
  if (!state) return;
  const key = namespaceMapKey(threadId, ns);
  // A read that began before this commit may have read before it: it keeps nothing.
  touch(state, key);
  if (!written) return dropNamespace(state, threadId, ns);
  const { serde, row, blobs: stored } = written;
  const id = row.checkpoint_id;
  const entry = state.entries.get(key);
  const writes = state.written.get(checkpointMapKey(threadId, ns, id));
  // Only a newer checkpoint on top of a kept window (maybe empty), with every value known, goes on top.
  if (!valid(ctx, state, t) || state.lostTrack || !entry || entry.serde !== serde || writes === null) {
    return dropNamespace(state, threadId, ns);
  }
  const base = entry.rows[0];
  if (base ? id <= base.row.checkpoint_id : !entry.complete) return dropNamespace(state, threadId, ns);
  const baseVersions = base ? Object.keys(base.row.channel_versions) : [];
  const blobs: (BlobRow | undefined)[] = [];
  // The shipped serializer's bytes are the put's own: kept as they are (serde/in-place.ts).
  const inPlace = keepsInPlace(serde);
  for (const [channel, version] of Object.entries(row.channel_versions)) {
    const own = stored.find((blob) => blob.channel === channel && blob.version === version);
    const at = baseVersions.indexOf(channel);
    if (own) blobs.push(copyBlob(own, inPlace));
    else if (base && at >= 0 && base.row.channel_versions[channel] === version) blobs.push(base.blobs[at]);
    // A version the row lists as stored without a value (schema step 5; a graph's consumed trigger
    // channels): the read path asks for none, so neither does the entry.
    else if (isAbsent(row, channel, version)) blobs.push(undefined);
    else return dropNamespace(state, threadId, ns);
  }
  state.written.delete(checkpointMapKey(threadId, ns, id));
  // The writes kept for it are copies already (mergeWrites), held by nothing else now.
  const raw: RawTuple = { row: copyRow(row, inPlace), blobs, writes: writes ?? [] };
  keep(state, key, { ...entry, rows: [raw, ...entry.rows], bytes: 0, ownPut: id });
}

/**
 * Updates the entry after this saver's putWrites of `rows` (one task's, one
 * checkpoint's) committed; `stored` false when the transaction may have
 * dropped some (a deleted thread's writes): the namespace is dropped then.
 */
export function keepWrites(ctx: SaverContext, t: FreshTicket | undefined, rows: WriteRow[], stored: boolean): void {
  const state = states.get(ctx);
  const first = rows[0];
  if (!state || !first) return;
  const { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } = first;
  const key = namespaceMapKey(threadId, ns);
  touch(state, key);
  const entry = state.entries.get(key);
  if (!valid(ctx, state, t) || !stored) {
    remember(state, checkpointMapKey(threadId, ns, id), null);
    return dropNamespace(state, threadId, ns);
  }
  const hit = entry?.rows.find((raw) => raw.row.checkpoint_id === id);
  if (entry && hit) {
    const kept = entry.rows.map((raw) => (raw === hit ? { ...raw, writes: mergeWrites(raw.writes, rows) } : raw));
    return keep(state, key, { ...entry, rows: kept, bytes: 0 });
  }
  // A checkpoint older than the window's newest and not in it changes no kept checkpoint (it is not
  // stored, or below the window); a newer one's writes are kept for its put (a graph with async
  // durability stores a step's writes before its checkpoint). A newer one is not stored yet: the
  // window's newest is the namespace's, as the lease proves, so the window stays as it is.
  const newest = entry?.rows[0]?.row.checkpoint_id;
  if (newest && id < newest) return;
  const known = state.written.get(checkpointMapKey(threadId, ns, id));
  remember(state, checkpointMapKey(threadId, ns, id), known === null ? null : mergeWrites(known ?? [], rows));
}

/**
 * Forgets what is kept of a namespace after a write of this saver failed
 * (it may have committed all the same), and that `checkpointId` may have
 * writes this saver cannot account for.
 */
export function forgetFailed(ctx: SaverContext, threadId: string, ns: string, checkpointId: string): void {
  const state = states.get(ctx);
  if (!state) return;
  remember(state, checkpointMapKey(threadId, ns, checkpointId), null);
  dropNamespace(state, threadId, ns);
}

/** Forgets everything and lets the lease go (the saver closes). */
export function closeFresh(ctx: SaverContext): void {
  const state = states.get(ctx);
  if (state) {
    dropAll(state);
    state.written.clear();
    state.lostTrack = false;
    state.touched.clear();
  }
  closeProofs(ctx);
  leaseOf(ctx.db)?.lease.close();
}

/** How many namespaces a saver keeps now (for tests and diagnostics). @internal */
export function freshSize(ctx: SaverContext): number {
  return states.get(ctx)?.entries.size ?? 0;
}
