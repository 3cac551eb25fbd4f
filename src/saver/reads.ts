/**
 * The saver's read plans: sequences of requests issued inside one read
 * transaction (opened by db.ts), returning rows still serialized.
 */
import type { KeyRanges, Tx } from "../idb/database.js";
import { SerializationError } from "../core/errors.js";
import { prefixBounds } from "./keys.js";
import type { RawTuple } from "./rows.js";
import type { BlobRow, CheckpointRow, SaverSchema, Version, WriteRow } from "./schema.js";

/** A transaction that can at least read the saver's stores. */
type ReadTx = Tx<SaverSchema, "readonly"> | Tx<SaverSchema, "readwrite">;

/** The newest checkpoint row of a namespace: one step of a reverse cursor. */
export async function latestRow(
  tx: ReadTx,
  ranges: KeyRanges,
  threadId: string,
  checkpointNs: string,
): Promise<CheckpointRow | undefined> {
  const bounds = prefixBounds(threadId, checkpointNs);
  const cursor = await tx.objectStore("checkpoints").openCursor(ranges.bound(bounds.lower, bounds.upper), "prev");
  return cursor?.value;
}

/**
 * Blob reads already issued in one transaction, by key: consecutive
 * checkpoints share most channel versions, so a page of them asks for each
 * blob once.
 */
export type BlobReads = Map<string, Promise<BlobRow | undefined>>;

/**
 * A page of checkpoint rows with their blobs and writes (each blob read once
 * for the page: neighbours share unchanged channels), or, without
 * `withDetails`, the rows alone.
 */
export function readPage(
  tx: ReadTx,
  ranges: KeyRanges,
  rows: CheckpointRow[],
  withDetails = true,
  contiguous = false,
): Promise<RawTuple[]> {
  if (!withDetails) return Promise.resolve(rows.map((row): RawTuple => ({ row, blobs: [], writes: [] })));
  const blobReads: BlobReads = new Map();
  const pageWrites = contiguous && rows.length > 1 ? readPageWrites(tx, ranges, rows) : undefined;
  if (contiguous && rows.length > 1) readPageBlobs(tx, ranges, rows, blobReads);
  return Promise.all(
    rows.map((row) =>
      readDetails(
        tx,
        ranges,
        row,
        blobReads,
        pageWrites?.then((byId) => byId.get(row.checkpoint_id) ?? []),
      ),
    ),
  );
}

/**
 * The pending writes of a page of one namespace's consecutive checkpoints,
 * by checkpoint id, in one request instead of one per checkpoint: their keys
 * lie between the oldest row's and the newest's. (The rows' own links are
 * not trusted here: only the ids of the rows read decide what is returned.)
 */
async function readPageWrites(tx: ReadTx, ranges: KeyRanges, rows: CheckpointRow[]): Promise<Map<string, WriteRow[]>> {
  const { thread_id: t, checkpoint_ns: ns } = rows[0]!;
  let [oldest, newest] = [rows[0]!.checkpoint_id, rows[0]!.checkpoint_id];
  for (const row of rows) {
    if (row.checkpoint_id < oldest) oldest = row.checkpoint_id;
    if (row.checkpoint_id > newest) newest = row.checkpoint_id;
  }
  const byId = new Map<string, WriteRow[]>();
  const writes = await tx
    .objectStore("writes")
    .getAll(ranges.bound(prefixBounds(t, ns, oldest).lower, prefixBounds(t, ns, newest).upper));
  for (const write of writes) {
    const list = byId.get(write.checkpoint_id);
    if (list) list.push(write);
    else byId.set(write.checkpoint_id, [write]);
  }
  return byId;
}

/** Fewest versions of one channel in a page worth one range read instead of one read each. */
const RANGE_READ_MIN = 4;

/** IndexedDB's order of two versions: numbers before strings, each in its own order. */
function versionOrder(a: Version, b: Version): number {
  if (typeof a !== typeof b) return typeof a === "number" ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Starts the blob reads of a page of one namespace's consecutive rows: for
 * each channel with several versions in the page, one `getAll` over the
 * range between its lowest and highest version (they grow with the steps, so
 * a page's versions are neighbours), capped at twice the versions asked for
 * so a range crowded by other branches' versions costs at most that; what
 * the range read misses is read one by one.
 */
function readPageBlobs(tx: ReadTx, ranges: KeyRanges, rows: CheckpointRow[], blobReads: BlobReads): void {
  const { thread_id: t, checkpoint_ns: ns } = rows[0]!;
  const byChannel = new Map<string, Version[]>();
  for (const row of rows) {
    if (typeof row.channel_versions !== "object" || row.channel_versions === null) return;
    for (const [channel, version] of Object.entries(row.channel_versions)) {
      const versions = byChannel.get(channel);
      if (!versions) byChannel.set(channel, [version]);
      else if (!versions.includes(version)) versions.push(version);
    }
  }
  const blobStore = tx.objectStore("blobs");
  for (const [channel, versions] of byChannel) {
    if (versions.length < RANGE_READ_MIN) continue;
    versions.sort(versionOrder);
    const cap = versions.length * 2;
    const range = ranges.bound([t, ns, channel, versions[0]!], [t, ns, channel, versions[versions.length - 1]!]);
    const read = blobStore.getAll(range, cap).then((found) => ({
      byVersion: new Map(found.map((blob) => [blob.version, blob])),
      complete: found.length < cap,
    }));
    for (const version of versions) {
      blobReads.set(
        blobKey(t, ns, channel, version),
        read.then(
          ({ byVersion, complete }) =>
            byVersion.get(version) ?? (complete ? undefined : blobStore.get([t, ns, channel, version])),
        ),
      );
    }
  }
}

function blobKey(t: string, ns: string, channel: string, version: Version): string {
  // String(): JSON would write Infinity and -Infinity (distinct keys in IndexedDB) both as null.
  return JSON.stringify([t, ns, channel, typeof version, String(version)]);
}

/** The blobs and writes of one checkpoint row. */
export async function readDetails(
  tx: ReadTx,
  ranges: KeyRanges,
  row: CheckpointRow,
  blobReads: BlobReads = new Map(),
  writesRead?: Promise<WriteRow[]>,
): Promise<RawTuple> {
  if (typeof row.channel_versions !== "object" || row.channel_versions === null) {
    throw new SerializationError(
      `Checkpoint ${String(row.checkpoint_id)} of thread "${String(row.thread_id)}" has no channel versions: the row was altered outside the saver.`,
    );
  }
  const blobStore = tx.objectStore("blobs");
  const { thread_id: t, checkpoint_ns: ns, checkpoint_id: id } = row;
  const bounds = prefixBounds(t, ns, id);
  const readBlob = (channel: string, version: Version) => {
    const key = blobKey(t, ns, channel, version);
    let read = blobReads.get(key);
    if (!read) {
      read = blobStore.get([t, ns, channel, version]);
      blobReads.set(key, read);
    }
    return read;
  };
  const [blobs, writes] = await Promise.all([
    Promise.all(Object.entries(row.channel_versions).map(([channel, version]) => readBlob(channel, version))),
    writesRead ?? tx.objectStore("writes").getAll(ranges.bound(bounds.lower, bounds.upper)),
  ]);
  return { row, blobs, writes };
}

/** Every row of a thread in one store (all namespaces). */
export function threadRows<S extends "checkpoints" | "blobs" | "writes">(
  tx: ReadTx,
  ranges: KeyRanges,
  store: S,
  threadId: string,
): Promise<SaverSchema[S]["value"][]> {
  const bounds = prefixBounds(threadId);
  return tx.objectStore(store).getAll(ranges.bound(bounds.lower, bounds.upper)) as Promise<SaverSchema[S]["value"][]>;
}

/** What the ancestor walk found for the delta-channel history. */
export interface AncestorWalk {
  /** Ancestor ids from the parent of the target up, nearest first. */
  path: string[];
  /** The rows of `path` (same order): their parent links and versions steered the walk. */
  rows: CheckpointRow[];
  /** Per channel: the blob that seeds it and the depth in `path` it was found at. */
  seeds: Map<string, { blob: BlobRow; depth: number }>;
  /** Per requested channel (same order): its writes on its part of the path. */
  writesByChannel: WriteRow[][];
}

/** Rows fetched per request while walking up the parent chain. */
const WALK_BATCH = 128;

/** A version as a set member: IndexedDB tells 1 and "1" apart, and so must we. */
function versionKey(version: Version): string {
  return `${typeof version}:${String(version)}`;
}

/** Index of `id` in the ascending `ids`, or -1. */
function indexOf(ids: string[], id: string): number {
  let low = 0;
  let high = ids.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const here = ids[mid]!;
    if (here === id) return mid;
    if (here < id) low = mid + 1;
    else high = mid - 1;
  }
  return -1;
}

/**
 * The delta-channel history walk, in a few requests of one transaction
 * whatever the depth:
 * 1. every checkpoint id of the namespace, and for each channel the versions
 *    that have a stored value (keys only);
 * 2. the parent chain, read in batches of rows just below the current id
 *    (a parent is almost always older, so its id sorts lower; when it is not,
 *    it is read on its own), checked against those versions in memory;
 * 3. the seed blobs and each channel's writes on its part of the path, one
 *    range read of the writes index `[thread, ns, channel, checkpoint_id]` each.
 */
export async function walkAncestors(
  tx: ReadTx,
  ranges: KeyRanges,
  target: CheckpointRow | undefined,
  channels: string[],
): Promise<AncestorWalk> {
  const path: string[] = [];
  const pathRows: CheckpointRow[] = [];
  const seeds = new Map<string, { blob: BlobRow; depth: number }>();
  if (!target) return { path, rows: pathRows, seeds, writesByChannel: channels.map(() => []) };
  const { thread_id: threadId, checkpoint_ns: checkpointNs } = target;
  const checkpoints = tx.objectStore("checkpoints");
  const blobStore = tx.objectStore("blobs");
  const nsBounds = prefixBounds(threadId, checkpointNs);
  const [checkpointKeys, ...blobKeyLists] = await Promise.all([
    checkpoints.getAllKeys(ranges.bound(nsBounds.lower, nsBounds.upper)),
    ...channels.map((channel) => {
      const bounds = prefixBounds(threadId, checkpointNs, channel);
      return blobStore.getAllKeys(ranges.bound(bounds.lower, bounds.upper));
    }),
  ]);
  const ids = checkpointKeys.map((key) => key[2]);
  const valued = new Map(
    channels.map((channel, i) => [channel, new Set(blobKeyLists[i]!.map((key) => versionKey(key[3])))]),
  );
  const seedAt = new Map<string, { version: Version; depth: number }>();
  const remaining = new Set(channels);
  const fetched = new Map<string, CheckpointRow>();
  // Parent links come from rows anyone with the database files can edit: a
  // cycle (or a chain longer than the namespace) would walk forever.
  const visited = new Set<string>([target.checkpoint_id]);
  let cursor = target.parent_checkpoint_id;
  while (cursor !== undefined && remaining.size > 0) {
    if (visited.has(cursor) || path.length >= ids.length) {
      throw new SerializationError(
        `The parent links of thread "${threadId}" (namespace "${checkpointNs}") form a cycle at checkpoint ${cursor}: the rows were altered outside the saver. Delete the thread or restore it from an export.`,
      );
    }
    visited.add(cursor);
    let row = fetched.get(cursor);
    if (!row) {
      const at = indexOf(ids, cursor);
      if (at < 0) break;
      const low = ids[Math.max(0, at - WALK_BATCH + 1)]!;
      const batch = await checkpoints.getAll(
        ranges.bound([threadId, checkpointNs, low], [threadId, checkpointNs, cursor]),
      );
      for (const each of batch) fetched.set(each.checkpoint_id, each);
      row = fetched.get(cursor);
      if (!row) break;
    }
    const depth = path.push(cursor) - 1;
    pathRows.push(row);
    for (const channel of remaining) {
      const version = row.channel_versions[channel];
      if (version !== undefined && valued.get(channel)!.has(versionKey(version))) {
        seedAt.set(channel, { version, depth });
        remaining.delete(channel);
      }
    }
    cursor = row.parent_checkpoint_id;
  }
  const writesIndex = tx.objectStore("writes").index("by_channel");
  const [seedBlobs, writesByChannel] = await Promise.all([
    Promise.all(
      channels.map((channel) => {
        const seed = seedAt.get(channel);
        return seed ? blobStore.get([threadId, checkpointNs, channel, seed.version]) : undefined;
      }),
    ),
    Promise.all(
      channels.map(async (channel) => {
        const last = seedAt.get(channel)?.depth ?? path.length - 1;
        if (last < 0) return [];
        const onPath = new Set(path.slice(0, last + 1));
        let low = path[0]!;
        let high = path[0]!;
        for (const id of onPath) {
          if (id < low) low = id;
          if (id > high) high = id;
        }
        const rows = await writesIndex.getAll(
          ranges.bound([threadId, checkpointNs, channel, low], [threadId, checkpointNs, channel, high]),
        );
        return rows.filter((write) => onPath.has(write.checkpoint_id));
      }),
    ),
  ]);
  channels.forEach((channel, i) => {
    const blob = seedBlobs[i];
    if (blob) seeds.set(channel, { blob, depth: seedAt.get(channel)!.depth });
  });
  return { path, rows: pathRows, seeds, writesByChannel };
}
