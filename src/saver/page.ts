/**
 * Page reads of `list()`: a page of checkpoint rows with their blobs and
 * pending writes in a few requests of one read transaction. Loaded with
 * `list()` (on demand), apart from the single-checkpoint reads of reads.ts
 * that every `getTuple` uses.
 */
import type { KeyRanges } from "../idb/database.js";
import { prefixBounds } from "./keys.js";
import { blobKey, readDetails, readValue, type BlobReads, type ReadTx } from "./reads.js";
import type { RawTuple } from "../rows/codec.js";
import { inlineBlobs, isAbsent, type CheckpointRow, type Version, type WriteRow } from "../rows/shapes.js";

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
  // Row format 2: a page's rows hold most of each other's values inline.
  for (const row of rows) {
    for (const blob of inlineBlobs(row)) {
      blobReads.set(blobKey(row.thread_id, row.checkpoint_ns, blob.channel, blob.version), Promise.resolve(blob));
    }
  }
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
      // A version the row lists as having no value (schema version 5) is not asked for, as readDetails
      // does not ask: a range read misses it, and it was then read on its own, two requests each.
      if (blobReads.has(blobKey(t, ns, channel, version)) || isAbsent(row, channel, version)) continue;
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
    const read = blobStore.getAll(range, cap).then((found) => new Map(found.map((blob) => [blob.version, blob])));
    for (const version of versions) {
      // Missed (a crowded range, or a value inline in a row outside the page): read on its own.
      blobReads.set(
        blobKey(t, ns, channel, version),
        read.then((byVersion) => byVersion.get(version) ?? readValue(tx, t, ns, channel, version)),
      );
    }
  }
}
