/**
 * The state behind answers from memory (fresh-cache.ts): per saver, the
 * kept windows and what proves them current (the lease's epoch, a
 * generation every drop bumps, the connection and exclusive-write marks),
 * the drops, and the bounds. fresh-cache.ts reads and updates it; nothing
 * else does.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import type { CheckpointChange } from "./events.js";
import { leaseOf } from "./write-lease.js";
import type { RawTuple } from "../rows/codec.js";
import type { WriteRow } from "../rows/shapes.js";
import { sizeOf } from "./fresh-rows.js";
import { namespaceMapKey, threadOfMapKey } from "./keys.js";

/** Namespaces kept per saver. */
export const MAX_ENTRIES = 64;
/** Stored bytes kept per saver at most. */
export const MAX_BYTES = 8 * 1024 * 1024;
/** A namespace's window weighs at most this (its oldest go first); a checkpoint larger alone is read every time. */
export const MAX_ENTRY_BYTES = 1024 * 1024;
/**
 * Checkpoints kept per namespace at most. A chat graph writes about three
 * per turn (the input, one per superstep), so 256 hold the whole history of
 * an 85-turn chat, or the newest 85 turns of a longer one: more than the
 * first page a history view asks for (the Agent Server's history route
 * defaults to 10; clients ask for up to 100). Memory is the cost, bounded
 * by MAX_ENTRY_BYTES too (docs/fresh-reads.md, Limits).
 */
export const MAX_KEPT_ROWS = 256;
/** Checkpoint ids with writes of this saver but no entry yet, remembered at most. */
export const MAX_WRITTEN = 256;

/** A namespace's kept window. */
export interface Entry {
  /** The namespace's newest checkpoints, newest first, without a gap. */
  rows: RawTuple[];
  /** Whether `rows` reach the namespace's oldest checkpoint (no older one is stored). */
  complete: boolean;
  serde: SerializerProtocol;
  bytes: number;
  /** Set by a put's update: that put's own change notice, which follows, must not drop it. */
  ownPut?: string;
}

/** What a read or write saw when it started; see {@link ticket}. */
export interface FreshTicket {
  generation: number;
  epoch: number;
  connection: number;
  clock: number;
}

/** What one saver keeps, and what proves it current. */
export interface FreshState {
  entries: Map<string, Entry>;
  bytes: number;
  /** Bumped by every drop: a ticket of an earlier generation updates nothing. */
  generation: number;
  /** Counts starts of this saver's writes and updates of entries: the last per namespace is in `touched`. */
  clock: number;
  touched: Map<string, number>;
  /** Writes to checkpoints not kept yet, by checkpoint; `null` once some may have been missed. */
  written: Map<string, WriteRow[] | null>;
  /** Set when `written` forgot an id: puts then fill nothing (until close). */
  lostTrack: boolean;
  connection: number;
  /** The database's exclusive-write mark when last looked at (see {@link exclusiveSynced}). */
  exclusiveSeen: number | undefined;
}

/** Each saver's state, by its context. */
export const states = new WeakMap<SaverContext, FreshState>();

/** The state of `ctx`, made on first use (undefined where nothing is answered from memory); drops it all if the connection changed or a removal settled. */
export function stateOf(ctx: SaverContext): FreshState | undefined {
  const lease = leaseOf(ctx.db);
  if (!lease?.freshReads) return undefined;
  let state = states.get(ctx);
  if (!state) {
    const created: FreshState = (state = {
      entries: new Map(),
      bytes: 0,
      generation: 0,
      clock: 0,
      touched: new Map(),
      written: new Map(),
      lostTrack: false,
      connection: ctx.db.connectionMark,
      exclusiveSeen: ctx.db.exclusiveMark,
    });
    states.set(ctx, created);
    lease.lease.onLost(() => dropAll(created));
    const onChange = (change: CheckpointChange) => onFeed(created, change);
    changeListeners.set(created, onChange);
  }
  // Every time, not once: after the saver's close() the feed's channel is shut, and this reopens it.
  ctx.feed.subscribe(changeListeners.get(state)!);
  if (state.connection !== ctx.db.connectionMark) {
    dropAll(state);
    state.connection = ctx.db.connectionMark;
  }
  exclusiveSynced(ctx, state);
  return state;
}

/**
 * Drops everything kept when a write of this saver that may remove or
 * change rows (a delete, a prune, a key change, sync's apply: any write not
 * flagged additive) has started or settled since the last look; true when
 * none is pending and none settled since. Its own change notice drops the
 * thread's entries too, but only after its caller resumes: a put's guard
 * proof (put-proof.ts) must not trust the rows such a write removes
 * from the moment its transaction may exist.
 */
export function exclusiveSynced(ctx: SaverContext, state: FreshState): boolean {
  const mark = ctx.db.exclusiveMark;
  if (mark === state.exclusiveSeen) return mark !== undefined;
  dropAll(state);
  state.exclusiveSeen = mark;
  return false;
}

const changeListeners = new WeakMap<FreshState, (change: CheckpointChange) => void>();

function onFeed(state: FreshState, change: CheckpointChange): void {
  if (!change.remote && change.kind === "put" && change.checkpointNs !== undefined) {
    const entry = state.entries.get(namespaceMapKey(change.threadId, change.checkpointNs));
    if (entry?.ownPut !== undefined && entry.ownPut === change.checkpointId) {
      delete entry.ownPut;
      return;
    }
  }
  dropThread(state, change.threadId);
}

/** Forgets a namespace's entry and its bytes. */
export function remove(state: FreshState, key: string): void {
  const entry = state.entries.get(key);
  if (!entry) return;
  state.bytes -= entry.bytes;
  state.entries.delete(key);
}

/** Forgets every entry and every remembered write; tickets taken before keep nothing. */
export function dropAll(state: FreshState): void {
  state.generation++;
  state.entries.clear();
  state.bytes = 0;
  for (const key of state.written.keys()) state.written.set(key, null);
}

/** Forgets a thread's entries and remembered writes; tickets taken before keep nothing. */
export function dropThread(state: FreshState, threadId: string): void {
  state.generation++;
  const owns = (key: string) => threadOfMapKey(key) === threadId;
  for (const key of [...state.entries.keys()]) if (owns(key)) remove(state, key);
  for (const key of state.written.keys()) if (owns(key)) state.written.set(key, null);
}

/** Drops a namespace's entry (an update of it could not be proven); reads of it in flight keep nothing. */
export function dropNamespace(state: FreshState, threadId: string, checkpointNs: string): void {
  const key = namespaceMapKey(threadId, checkpointNs);
  remove(state, key);
  touch(state, key);
}

/** Marks a namespace written now: reads that began earlier keep nothing of it. */
export function touch(state: FreshState, key: string): void {
  state.touched.delete(key);
  state.touched.set(key, ++state.clock);
  // Forgetting a touch could let a read keep rows older than a write: drop instead.
  if (state.touched.size > MAX_ENTRIES * 4) {
    state.touched.delete(state.touched.keys().next().value!);
    state.generation++;
  }
}

/** Whether what `t` saw still holds: the lease held throughout, nothing dropped, the same connection. */
export function valid(ctx: SaverContext, state: FreshState, t: FreshTicket | undefined): t is FreshTicket {
  const lease = leaseOf(ctx.db)?.lease;
  return (
    t !== undefined &&
    exclusiveSynced(ctx, state) &&
    lease !== undefined &&
    lease.held &&
    lease.epoch === t.epoch &&
    state.generation === t.generation &&
    state.connection === t.connection &&
    ctx.db.connectionMark === t.connection
  );
}

/** The entry of a namespace, if provably current and kept for `serde`; marks it and the lease as used. */
export function servable(ctx: SaverContext, threadId: string, ns: string, serde: SerializerProtocol) {
  const state = states.get(ctx);
  if (!state || !leaseOf(ctx.db)?.lease.held || state.connection !== ctx.db.connectionMark) return undefined;
  if (!exclusiveSynced(ctx, state)) return undefined;
  const key = namespaceMapKey(threadId, ns);
  const entry = state.entries.get(key);
  if (!entry || entry.serde !== serde) return undefined;
  // Re-inserted: the map's order is the order of use, the oldest goes first.
  state.entries.delete(key);
  state.entries.set(key, entry);
  leaseOf(ctx.db)?.lease.used();
  return entry;
}

/** Notes `writes` stored for a checkpoint not kept yet (`null`: unknown), within MAX_WRITTEN. */
export function remember(state: FreshState, key: string, writes: WriteRow[] | null): void {
  state.written.delete(key);
  state.written.set(key, writes);
  if (state.written.size > MAX_WRITTEN) {
    state.written.delete(state.written.keys().next().value!);
    state.lostTrack = true;
  }
}

/** Sets `entry` as the namespace's, within the bounds: its oldest checkpoints go first, then the least used namespaces. */
export function keep(state: FreshState, key: string, entry: Entry): void {
  remove(state, key);
  state.clock++;
  state.touched.delete(key);
  state.touched.set(key, state.clock);
  let bytes = 0;
  const over = entry.rows.findIndex((raw, i) => i >= MAX_KEPT_ROWS || (bytes += sizeOf(raw)) > MAX_ENTRY_BYTES);
  if (over >= 0) {
    bytes -= over < MAX_KEPT_ROWS ? sizeOf(entry.rows[over]!) : 0;
    entry.rows = entry.rows.slice(0, over);
    entry.complete = false;
  }
  // Nothing left to answer from: the newest alone is too large.
  if (!entry.rows.length && !entry.complete) return;
  entry.bytes = bytes;
  state.entries.set(key, entry);
  state.bytes += entry.bytes;
  for (const [oldest] of state.entries) {
    if (state.entries.size <= MAX_ENTRIES && state.bytes <= MAX_BYTES) break;
    remove(state, oldest);
  }
}
