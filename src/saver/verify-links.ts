/**
 * The check of the parent links and channel versions a walk up the parent
 * chain follows (delta history, prune), under an encrypting serializer: see
 * verify.ts for why. Kept apart from it: only the lazily loaded walks need
 * it, and it remembers what it proved (the walks repeat over the same rows).
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { assertVersionsMatch, decodeCheckpoint, sameVersions } from "../rows/codec.js";
import type { CheckpointRow, Version, WriteRow } from "../rows/shapes.js";
import { authenticates } from "./verify.js";
import { chainOf } from "./chain.js";
import { checkpointMapKey } from "./keys.js";
import { DecryptionError } from "../core/errors.js";

/**
 * What decoding a checkpoint row proved: the parent link and channel
 * versions sealed with its checkpoint, and the last bytes of that sealed
 * value (its AES-GCM tag).
 */
interface Proven {
  parent: string | undefined;
  chain: string | undefined;
  /** Its `parent_writes` (version 4), so an edited list is no longer the row proven. */
  writes: unknown;
  versions: Record<string, Version>;
  tag: Uint8Array;
}

/** True when two `parent_writes` lists (one as stored, one as proven) hold the same keys in the same order. */
function sameList(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b)) return a === undefined && b === undefined;
  return (
    a.length === b.length &&
    a.every((entry: unknown, i) => {
      const other: unknown = b[i];
      return (
        Array.isArray(entry) &&
        Array.isArray(other) &&
        entry.length === 3 &&
        other.length === 3 &&
        entry.every((part, j) => part === other[j])
      );
    })
  );
}

/** Bytes of the sealed checkpoint remembered per proven row: a full AES-GCM tag. */
const TAG_BYTES = 16;

/** Rows remembered per serializer (a few hundred bytes each). */
const MAX_PROVEN = 4096;

/**
 * Per bound serializer (a key change binds a new one, so nothing proven
 * under an old key carries over): the rows whose structure was proven.
 *
 * Every walk up the parent chain (each step of a graph, each snapshot of
 * its history) used to decrypt the whole chain again just to check links
 * that had not changed. A row whose clear parent link and versions, and
 * whose sealed checkpoint's tag, are those of a row already proven steers a
 * walk exactly as that row did; decrypting it again would only re-prove
 * what is known. Altering any clear field (or the sealed value) misses
 * here, and the row is decrypted and checked as before. Accepting such a
 * row gives no more than replaying the proven row itself, which AES-GCM
 * accepts too (rows carry no freshness).
 */
const provenBy = new WeakMap<SerializerProtocol, Map<string, Proven>>();

function provenOf(serde: SerializerProtocol): Map<string, Proven> {
  let proven = provenBy.get(serde);
  if (!proven) provenBy.set(serde, (proven = new Map()));
  return proven;
}

/** The sealed bytes' last {@link TAG_BYTES}, or undefined if the row holds no such bytes. */
function tagOf(row: CheckpointRow): Uint8Array | undefined {
  const data: unknown = row.checkpoint?.[1];
  return data instanceof Uint8Array && data.length >= TAG_BYTES ? data.subarray(data.length - TAG_BYTES) : undefined;
}

function provenKey(row: CheckpointRow): string {
  return checkpointMapKey(row.thread_id, row.checkpoint_ns, row.checkpoint_id);
}

/** True when `row` is, in every field a walk reads, a row already proven. */
function isProven(proven: Map<string, Proven>, row: CheckpointRow): boolean {
  const entry = proven.get(provenKey(row));
  const tag = tagOf(row);
  return (
    entry !== undefined &&
    tag !== undefined &&
    entry.parent === row.parent_checkpoint_id &&
    entry.chain === row.chain &&
    sameList(row.parent_writes, entry.writes) &&
    tag.every((byte, i) => byte === entry.tag[i]) &&
    sameVersions(row.channel_versions, entry.versions)
  );
}

function remember(proven: Map<string, Proven>, row: CheckpointRow, versions: Record<string, Version>): void {
  const tag = tagOf(row);
  if (tag === undefined) return;
  const key = provenKey(row);
  proven.delete(key);
  if (proven.size >= MAX_PROVEN) proven.delete(proven.keys().next().value!);
  proven.set(key, {
    parent: row.parent_checkpoint_id,
    chain: row.chain,
    writes: row.parent_writes,
    versions,
    tag: tag.slice(),
  });
}

/**
 * What {@link checkChains} left to do: chains to compare once hashed, rows
 * to decrypt, and rows their chains proved once those open.
 */
export interface LinkCheck {
  serde: SerializerProtocol;
  /** Rows whose chain must hash right, newest first (the first wrong one is reported). */
  chained: CheckpointRow[];
  /** Their hashes, in that order. */
  hashes: Promise<string[]>;
  decrypt: CheckpointRow[];
  hashed: CheckpointRow[];
}

/**
 * The first part of {@link verifyParentLinks}: sorts out which rows a hash
 * proves and which must be decrypted, and starts the hashes; undefined
 * without encryption. A walk runs it while its last reads are in flight
 * (the hashes run meanwhile), and awaits nothing: it may run inside the
 * walk's transaction.
 */
export function checkChains(
  serde: SerializerProtocol,
  rows: readonly CheckpointRow[],
  others: readonly CheckpointRow[] = [],
): LinkCheck | undefined {
  if (!authenticates(serde)) return undefined;
  const known = provenOf(serde);
  // Per namespace (prune's rows span several), by id.
  const byId = new Map<string, Map<string, CheckpointRow>>();
  for (const row of [...others, ...rows]) {
    let ids = byId.get(row.checkpoint_ns);
    if (!ids) byId.set(row.checkpoint_ns, (ids = new Map()));
    ids.set(row.checkpoint_id, row);
  }
  const parentOf = (row: CheckpointRow) =>
    row.parent_checkpoint_id === undefined ? undefined : byId.get(row.checkpoint_ns)!.get(row.parent_checkpoint_id);
  const isKnown = new Set(rows.filter((row) => isProven(known, row)));
  const chainProven = new Set<CheckpointRow>();
  const chained: CheckpointRow[] = [];
  const hashes: Promise<string>[] = [];
  const decrypt: CheckpointRow[] = [];
  const hashed: CheckpointRow[] = [];
  for (const row of [...rows].sort((a, b) => (a.checkpoint_id < b.checkpoint_id ? 1 : -1))) {
    const parent = parentOf(row);
    const hashable = row.chain !== undefined && (row.parent_checkpoint_id === undefined || parent !== undefined);
    // Nothing to learn from a row proven before whose parent is proven too.
    if (!hashable || (isKnown.has(row) && (parent === undefined || isKnown.has(parent)))) {
      if (!isKnown.has(row)) decrypt.push(row);
      continue;
    }
    chained.push(row);
    hashes.push(chainOf(row, parent?.chain));
    // Its chain is proven by a child, by a proof kept from before, or by decrypting it.
    (chainProven.has(row) || isKnown.has(row) ? hashed : decrypt).push(row);
    if (parent?.chain !== undefined) chainProven.add(parent);
  }
  const check: LinkCheck = { serde, chained, hashes: Promise.all(hashes), decrypt, hashed };
  // Awaited by finishLinkCheck, unless the walk's read failed first.
  check.hashes.catch(() => undefined);
  return check;
}

/**
 * The rest of {@link verifyParentLinks}: throws `DecryptionError` on a
 * chain that does not hash right, then decrypts the rows `check` left, and
 * only then remembers what the hashes proved (they hang on those rows).
 */
export async function finishLinkCheck(check: LinkCheck | undefined): Promise<void> {
  if (!check) return;
  const hashes = await check.hashes;
  check.chained.forEach((row, i) => {
    if (hashes[i] !== row.chain) {
      throw new DecryptionError(
        `Checkpoint ${row.checkpoint_id} of thread "${row.thread_id}" is inconsistent: its parent link, channel versions or chain do not hash to its chain. The row or its parent was altered outside the saver.`,
      );
    }
  });
  const known = provenOf(check.serde);
  const opened = await Promise.all(
    check.decrypt.map(async (row) => {
      const checkpoint = await decodeCheckpoint(check.serde, row);
      assertVersionsMatch(row, checkpoint, true);
      return checkpoint.channel_versions ?? {};
    }),
  );
  check.decrypt.forEach((row, i) => remember(known, row, opened[i]!));
  for (const row of check.hashed) remember(known, row, row.channel_versions);
}

/**
 * Checks the parent links and channel versions a walk up the parent chain
 * followed, under an encrypting serializer; resolves when all hold, fails
 * with `DecryptionError` when one was altered. No-op without encryption.
 *
 * A row is proven by one of: being a row already proven (see
 * {@link provenBy}); its chain (binding version 3, chain.ts) hashing right
 * once a child proved that chain; or decrypting its checkpoint (sealed with
 * its parent link under binding version 2 or 3) and comparing versions. Rows
 * go newest id first, so a walk's target is decrypted and its ancestors are
 * proven by hashes. `others` are rows read with them whose chains may prove
 * the last of `rows` (a walk's next ancestor); they are not checked.
 */
export async function verifyParentLinks(
  serde: SerializerProtocol,
  rows: readonly CheckpointRow[],
  others: readonly CheckpointRow[] = [],
): Promise<void> {
  await finishLinkCheck(checkChains(serde, rows, others));
}

/**
 * Row binding version 4: checks that each checkpoint on a walked path
 * still holds the pending writes its child lists (`parent_writes`, hashed
 * into the child's chain, so call this once the chains are proven). A
 * walk reads one channel's writes for the part of the path it needs, so
 * only the listed writes to that channel on that part are looked for: a
 * deleted one, or one moved to another key or channel, would silently drop
 * a turn from the history it rebuilds. Extra writes are not an error: a
 * sync merge or a late task adds writes after a child lists its parent's,
 * and a write's value opens only at its own key (its binding).
 *
 * `covering[d]` lists the writes of `path[d]` (the target for depth 0, then
 * each path row for its parent); `depths[i]` is the deepest index of
 * `path` whose writes were read for `channels[i]`. Throws
 * `DecryptionError` naming the thread, the checkpoint and the write.
 */
export function checkListedWrites(
  covering: readonly CheckpointRow[],
  path: readonly string[],
  channels: readonly string[],
  depths: readonly number[],
  writesByChannel: readonly (readonly WriteRow[])[],
): void {
  channels.forEach((channel, i) => {
    let found: Set<string> | undefined;
    for (let depth = 0; depth <= depths[i]! && depth < covering.length; depth++) {
      const child = covering[depth]!;
      // Only a proven chain vouches for its list (rows without one list nothing).
      if (child.chain === undefined || !Array.isArray(child.parent_writes)) continue;
      for (const entry of child.parent_writes) {
        const [taskId, idx, listed] = Array.isArray(entry) ? entry : [];
        if (listed !== channel) continue;
        // Ids hold no U+0000 (the saver refuses it), so the joined key is unambiguous.
        found ??= new Set(writesByChannel[i]!.map((w) => `${w.checkpoint_id}\u0000${w.task_id}\u0000${w.idx}`));
        if (found.has(`${path[depth]!}\u0000${String(taskId)}\u0000${String(idx)}`)) continue;
        throw new DecryptionError(
          `Checkpoint ${path[depth]!} of thread "${child.thread_id}" (namespace "${child.checkpoint_ns}") is missing its pending write to "${channel}" of task ${taskId} (idx ${String(idx)}), which its child ${child.checkpoint_id} lists: write rows were deleted or altered outside the saver.`,
        );
      }
    }
  });
}
