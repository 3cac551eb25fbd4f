/**
 * The checkpoint this saver put (or read) last in each namespace, so
 * `getTuple` of a namespace's latest can ask for that checkpoint's writes in
 * the same round trip as the latest row itself (a graph run asks for the
 * latest checkpoint at every invoke, and it is almost always the one this
 * saver just put). A guess only: the read checks it against the row it
 * finds, in the same transaction, and reads the row's own details when it
 * was wrong.
 *
 * The guess also keeps the stored bytes of the values stored or read with
 * that checkpoint's row, so the read need not fetch them again. That rests
 * on the layout: a value is stored once per `(thread, namespace, channel,
 * version)`, versions carry a random branch tag (rows/versions.ts), and a blob is
 * deleted only once no row names it (`prune`, `deleteForRuns`,
 * `deleteThread`); so while the row found is the very row kept (same id,
 * versions and `created_at` stamp), its values are the bytes kept. Only a
 * put naming an existing version with another value (versions of a caller's
 * own making) can change them: this saver's own put replaces what it keeps
 * for the namespace, another tab's put of the same checkpoint stamps its row
 * anew, and another tab's change notice drops what is kept for the thread
 * (until it arrives, another tab's such put of an older checkpoint goes
 * unseen here), as do this saver's own deletes, copies and prunes, and
 * `close()`; and values whose transaction came before such a notice that
 * arrived before they are kept are not kept ({@link changeMark}). An absent
 * value may appear (`prune` stores a delta channel's snapshot at a version
 * that had none), so absences are kept only as the row listed them
 * (`absent_keys`, schema version 5): a read skips them on that guess and
 * keeps its answer only if the row it finds still lists them (prune and
 * sync take a key off the row in the transaction that stores the value),
 * and a put lists its parent's as its own only after checking them against
 * the parent row it reads anyway (put.ts). Only the serializer that wrote the bytes may
 * open them: a key change binds a new serializer, and the kept bytes are
 * then left unused.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { keepsInPlace } from "../serde/in-place.js";
import type { SaverContext } from "./context.js";
import { namespaceMapKey, threadOfMapKey } from "./keys.js";
import type { CheckpointChange } from "./events.js";
import type { BlobRow, CheckpointRow, Version } from "../rows/shapes.js";

/** The stored value of each channel version a checkpoint refers to, as far as this saver knows them. */
export interface KeptValues {
  /** The serializer the bytes were sealed with or read by: they are used only while it is the bound one. */
  serde: SerializerProtocol;
  /** Per channel, the blob row of its version. */
  blobs: Map<string, BlobRow>;
}

/** A namespace's checkpoint put last: its id, its row's stamp, the versions of its stored values, and the values kept. */
export interface RecentPut {
  checkpointId: string;
  /** The row's `created_at`: a put of the same checkpoint again (another tab, an import) stamps it anew. */
  createdAt: number | undefined;
  channelVersions: Record<string, Version>;
  values?: KeptValues;
  /** The row's `absent_keys`: the versions it listed as having no stored value. */
  absentKeys?: CheckpointRow["absent_keys"];
}

/** Namespaces remembered per saver: enough for the threads of a busy page, small enough to forget. */
const LIMIT = 64;

/** Bytes of values kept per saver at most; the oldest namespaces' values go first. */
export const KEPT_BYTES_LIMIT = 4 * 1024 * 1024;

/** One value larger than this is never kept (read again instead). */
export const KEPT_VALUE_LIMIT = 256 * 1024;

interface Recents {
  map: Map<string, RecentPut>;
  bytes: number;
  /** Changes that dropped kept values so far: see {@link changeMark}. */
  changes: number;
  /** Drops what is kept for a thread another tab changed, or this saver deleted, copied into or pruned. */
  onChange(change: CheckpointChange): void;
}

const recents = new WeakMap<SaverContext, Recents>();

function bytesOf(values: KeptValues | undefined): number {
  let bytes = 0;
  for (const blob of values?.blobs.values() ?? []) bytes += blob.value[1].byteLength;
  return bytes;
}

function stateOf(ctx: SaverContext): Recents {
  let state = recents.get(ctx);
  if (!state) recents.set(ctx, (state = newRecents()));
  // Every time, not once: after the saver's close() the feed's channel is shut, and this reopens it.
  ctx.feed.subscribe(state.onChange);
  return state;
}

/**
 * A mark to take before the transaction whose rows {@link rememberPut} will
 * keep: a change notice that arrives in between (say while a journal records
 * the commit) may concern rows that transaction saw, so their values are
 * then not kept.
 */
export function changeMark(ctx: SaverContext): number {
  return stateOf(ctx).changes;
}

/**
 * Remembers `put` (just committed, or just read) as its namespace's newest
 * checkpoint; its values only if no change was announced since `mark`.
 */
export function rememberPut(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  put: RecentPut,
  mark: number,
): void {
  const state = stateOf(ctx);
  if (mark !== state.changes) delete put.values;
  const { map } = state;
  const key = namespaceMapKey(threadId, checkpointNs);
  state.bytes -= bytesOf(map.get(key)?.values);
  // Re-inserted, so the map's order is the order of use and the oldest goes first.
  map.delete(key);
  map.set(key, put);
  state.bytes += bytesOf(put.values);
  if (map.size > LIMIT) {
    const [oldest, entry] = map.entries().next().value!;
    state.bytes -= bytesOf(entry.values);
    map.delete(oldest);
  }
  for (const entry of map.values()) {
    if (state.bytes <= KEPT_BYTES_LIMIT) break;
    state.bytes -= bytesOf(entry.values);
    delete entry.values;
  }
}

function newRecents(): Recents {
  const state: Recents = {
    map: new Map(),
    bytes: 0,
    changes: 0,
    onChange(change) {
      // This saver's own put already replaced what it keeps; anything else may have deleted or moved rows.
      if (!change.remote && change.kind === "put") return;
      state.changes++;
      for (const [key, entry] of state.map) {
        if (threadOfMapKey(key) !== change.threadId) continue;
        state.bytes -= bytesOf(entry.values);
        state.map.delete(key);
      }
    },
  };
  return state;
}

/**
 * Forgets everything (the saver closes): its channel shuts, so no other
 * tab's notice would reach what it kept until it is used again.
 */
export function forgetRecent(ctx: SaverContext): void {
  const state = recents.get(ctx);
  if (!state) return;
  state.map.clear();
  state.bytes = 0;
  // A put or read in flight across the close keeps no values either.
  state.changes++;
}

/** The checkpoint this saver put last in a namespace, if it remembers one. */
export function recentPut(ctx: SaverContext, threadId: string, checkpointNs: string): RecentPut | undefined {
  return recents.get(ctx)?.map.get(namespaceMapKey(threadId, checkpointNs));
}

/**
 * The values to keep for a checkpoint with `versions`: each channel's blob
 * from `blobs` (stored or read with the checkpoint's row, in the same
 * transaction) when it is of that version. Nothing is carried over from a
 * parent: only bytes this transaction stored or read are known to be the
 * stored ones. (A parent's blobs may be deleted with it, by another tab's
 * `deleteForRuns` say, before a child that names them is put; such a put
 * finds its parent missing and stores every value itself, see put.ts.)
 */
export function keptValues(
  serde: SerializerProtocol,
  versions: Record<string, Version>,
  blobs: Iterable<BlobRow | undefined>,
): KeptValues {
  const kept = new Map<string, BlobRow>();
  // A copy: the serializer that made the bytes may reuse its buffer, and one that reads them may write into
  // it; not the shipped serializer's "msgpack" bytes, which it makes fresh and only reads (serde/in-place.ts).
  const inPlace = keepsInPlace(serde);
  for (const blob of blobs) {
    if (blob && versions[blob.channel] === blob.version && blob.value[1].byteLength <= KEPT_VALUE_LIMIT) {
      kept.set(blob.channel, inPlace && blob.value[0] === "msgpack" ? blob : copyOf(blob));
    }
  }
  return { serde, blobs: kept };
}

/** `blob` with its own copy of the bytes. */
function copyOf(blob: BlobRow): BlobRow {
  return { ...blob, value: [blob.value[0], blob.value[1].slice()] };
}
