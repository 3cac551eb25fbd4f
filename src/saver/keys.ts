/**
 * Pure builders of the saver's IndexedDB keys and key-range bounds.
 *
 * IndexedDB orders keys Number < Date < String < Binary < Array, arrays
 * element by element, strings by UTF-16 code unit: exactly JavaScript's `<`
 * on strings (never `localeCompare`). So `[thread, ns, id]` keys list a
 * namespace's checkpoints in id order, and `[]` is an upper bound above every
 * string: `[...prefix]` to `[...prefix, []]` spans every key under a prefix.
 */

/** A compound IndexedDB key. */
export type Key = (string | number)[];

/** Lower and upper bound of every key that starts with `prefix`. */
export interface PrefixBounds {
  lower: IDBValidKey;
  upper: IDBValidKey;
}

/** Above every string, number and date in IndexedDB's key order. */
export const ABOVE_STRINGS: IDBValidKey = [];

/** Bounds that span every key starting with `prefix` (the prefix itself included). */
export function prefixBounds(...prefix: (string | number)[]): PrefixBounds {
  return { lower: prefix, upper: [...prefix, ABOVE_STRINGS] };
}

/**
 * A namespace as one string, for the saver's in-memory maps (the answers from
 * memory, the put proofs, the values kept from the last put). JSON of the
 * pair: unambiguous whatever characters the ids hold.
 */
export const namespaceMapKey = (threadId: string, checkpointNs: string): string =>
  JSON.stringify([threadId, checkpointNs]);

/** The thread of a key made by {@link namespaceMapKey} or {@link checkpointMapKey}. */
export const threadOfMapKey = (key: string): string => (JSON.parse(key) as string[])[0]!;

/** A checkpoint as one string, for in-memory maps (see {@link namespaceMapKey}). */
export const checkpointMapKey = (threadId: string, checkpointNs: string, checkpointId: string): string =>
  JSON.stringify([threadId, checkpointNs, checkpointId]);

/** Key of a checkpoint row. */
export function checkpointKey(threadId: string, checkpointNs: string, checkpointId: string): Key {
  return [threadId, checkpointNs, checkpointId];
}

/**
 * Bounds of one namespace's checkpoints strictly below `before` (when given):
 * `list({ before })` and "latest" are reverse cursors over this range.
 */
export function checkpointRangeBounds(
  threadId: string,
  checkpointNs: string,
  before?: string,
): PrefixBounds & { upperOpen: boolean } {
  if (before === undefined) return { ...prefixBounds(threadId, checkpointNs), upperOpen: false };
  return { lower: [threadId, checkpointNs], upper: [threadId, checkpointNs, before], upperOpen: true };
}

/**
 * Rows per read transaction when `list` and `listThreads` page through a
 * namespace. Here rather than in list.ts: listThreads (threads.ts, a chunk of
 * its own) would otherwise import the list chunk statically.
 */
export const LIST_PAGE = 64;
