/**
 * The check of the parent links and channel versions a walk up the parent
 * chain follows (delta history, prune), under an encrypting serializer: see
 * verify.ts for why. Kept apart from it: only the lazily loaded walks need
 * it, and it remembers what it proved (the walks repeat over the same rows).
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { assertVersionsMatch, decodeCheckpoint, sameVersions } from "./rows.js";
import type { CheckpointRow, Version } from "./schema.js";
import { authenticates } from "./verify.js";

/**
 * What decoding a checkpoint row proved: the parent link and channel
 * versions sealed with its checkpoint, and the last bytes of that sealed
 * value (its AES-GCM tag).
 */
interface Proven {
  parent: string | undefined;
  versions: Record<string, Version>;
  tag: Uint8Array;
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

/** The sealed bytes' last {@link TAG_BYTES}, or undefined if the row holds no such bytes. */
function tagOf(row: CheckpointRow): Uint8Array | undefined {
  const data: unknown = row.checkpoint?.[1];
  return data instanceof Uint8Array && data.length >= TAG_BYTES ? data.subarray(data.length - TAG_BYTES) : undefined;
}

function provenKey(row: CheckpointRow): string {
  return JSON.stringify([row.thread_id, row.checkpoint_ns, row.checkpoint_id]);
}

/** True when `row` is, in every field a walk reads, a row already proven. */
function isProven(proven: Map<string, Proven>, row: CheckpointRow): boolean {
  const entry = proven.get(provenKey(row));
  const tag = tagOf(row);
  const plain: unknown = row.channel_versions;
  return (
    entry !== undefined &&
    tag !== undefined &&
    entry.parent === row.parent_checkpoint_id &&
    tag.every((byte, i) => byte === entry.tag[i]) &&
    typeof plain === "object" &&
    plain !== null &&
    sameVersions(row.channel_versions, entry.versions)
  );
}

function remember(proven: Map<string, Proven>, row: CheckpointRow, versions: Record<string, Version>): void {
  const tag = tagOf(row);
  if (tag === undefined) return;
  const key = provenKey(row);
  proven.delete(key);
  if (proven.size >= MAX_PROVEN) proven.delete(proven.keys().next().value!);
  proven.set(key, { parent: row.parent_checkpoint_id, versions, tag: tag.slice() });
}

/**
 * Checks the parent links and channel versions a walk up the parent chain
 * followed: each row's checkpoint is decoded under binding version 2 (which
 * names its parent) and its versions compared with the row's, unless the
 * row is one already proven (see {@link provenBy}). Resolves when all hold;
 * no-op without encryption.
 */
export async function verifyParentLinks(serde: SerializerProtocol, rows: readonly CheckpointRow[]): Promise<void> {
  if (!authenticates(serde)) return;
  let proven = provenBy.get(serde);
  if (!proven) provenBy.set(serde, (proven = new Map()));
  await Promise.all(
    rows.map(async (row) => {
      if (isProven(proven, row)) return;
      const checkpoint = await decodeCheckpoint(serde, row);
      assertVersionsMatch(row, checkpoint, true);
      remember(proven, row, checkpoint.channel_versions ?? {});
    }),
  );
}
