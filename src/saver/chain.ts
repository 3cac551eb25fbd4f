/**
 * Row binding version 3: the hash chain of parent links (issue 11).
 *
 * A checkpoint row keeps its parent link and channel versions in the clear:
 * they steer walks up the parent chain (delta history, prune). Version 2
 * sealed them with each checkpoint, so a walk had to decrypt every ancestor
 * to trust them, which cost the first walk of an opened saver 1.1-1.4x.
 * Version 3 adds a clear `chain` to each row written by an encrypting
 * serializer:
 *
 *     chain = SHA-256("lgcp-chain.1", id, parent id, channel versions, parent's chain)
 *
 * and seals it with the checkpoint (it is part of the row's associated
 * data, rows/codec.ts). Once one row's `chain` is authentic (its checkpoint
 * decrypted), hashing its clear fields with its parent's clear `chain`
 * proves both, and so on up: one decryption and one hash per ancestor prove
 * the whole path. The hash has no key, so an attacker can compute chains for
 * rows they alter; what they cannot do is make an altered ancestor match the
 * `chain` sealed in a descendant. That is also why a writer trusts a
 * parent's `chain` only once it has decrypted that parent (or wrote it).
 *
 * Loaded lazily: only encrypting savers write chains, and only walks check them.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { sha256 } from "@noble/hashes/sha2.js";
import type { SaverContext } from "./context.js";
import { decodeCheckpoint, sameVersions } from "../rows/codec.js";
import type { CheckpointRow, Version } from "../rows/shapes.js";

/** The fields of a row its chain covers. */
export type ChainFields = Pick<CheckpointRow, "checkpoint_id" | "parent_checkpoint_id" | "channel_versions">;

/**
 * A version in the hash input: 1 and "1" are different versions, and -0 is 0
 * as an IndexedDB key. Anything else (only an edited row holds it) gets a
 * tag no written row has: ["v1"] or a String object would otherwise hash as
 * "v1" while the walk finds no blob under that version.
 */
function tagged(version: Version): string {
  return typeof version === "number" ? `n${String(version)}` : typeof version === "string" ? `s${version}` : "?";
}

/** Reused for every hash input: allocating per row cost more than hashing it. */
let scratch = new Uint8Array(1024);

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * The text hashed for a row: JSON of strings only, so it is unambiguous and
 * the same everywhere (hashed as UTF-8).
 */
export function chainText(fields: ChainFields, parentChain: string | undefined): string {
  const versions = Object.keys(fields.channel_versions)
    .sort()
    .map((channel) => [channel, tagged(fields.channel_versions[channel]!)]);
  return JSON.stringify([
    "lgcp-chain.1",
    fields.checkpoint_id,
    fields.parent_checkpoint_id ?? null,
    versions,
    parentChain ?? null,
  ]);
}

/**
 * The `chain` of a row with these fields whose parent's chain is
 * `parentChain` (undefined: a root, or a parent without one). Synchronous
 * (@noble/hashes): a walk hashes one row per ancestor, and WebCrypto's
 * `digest` costs an async round trip each, queued behind the walk's own
 * decryptions, about what decrypting the ancestors cost.
 */
export function chainOf(fields: ChainFields, parentChain: string | undefined): string {
  const text = chainText(fields, parentChain);
  // UTF-8 takes at most 3 bytes per UTF-16 code unit.
  if (scratch.length < text.length * 3) scratch = new Uint8Array(text.length * 3);
  const { written } = new TextEncoder().encodeInto(text, scratch);
  const digest = sha256(scratch.subarray(0, written));
  let hex = "";
  for (const byte of digest) hex += HEX[byte];
  return hex;
}

/** Chains this saver wrote or proved, per context: a put's parent is almost always the previous put. */
const known = new WeakMap<SaverContext, Map<string, string>>();

/** Chains remembered per saver (the heads of its busiest threads). */
const MAX_KNOWN = 256;

/** A checkpoint row's key as one string, for maps (here and in verify-links.ts). */
export const keyOf = (threadId: string, checkpointNs: string, checkpointId: string) =>
  JSON.stringify([threadId, checkpointNs, checkpointId]);

/**
 * The `chain` of a row whose parent's chain this saver does not remember,
 * from the stored rows. The parent's `chain` is trusted once its checkpoint
 * decrypted (its seal covers it). No parent row: the new row gets no chain
 * (binding version 2), as a chain over a parent that may appear later (with
 * other fields) could not be checked.
 */
async function storedChain(
  ctx: SaverContext,
  serde: SerializerProtocol,
  threadId: string,
  checkpointNs: string,
  fields: ChainFields,
  parentId: string,
): Promise<string | undefined> {
  const [parent, self] = await ctx.db.read(
    ["checkpoints"],
    (tx) => {
      const rows = tx.objectStore("checkpoints");
      return Promise.all([
        rows.get([threadId, checkpointNs, parentId]),
        rows.get([threadId, checkpointNs, fields.checkpoint_id]),
      ]);
    },
    "read the parent checkpoint",
  );
  const id = fields.checkpoint_id;
  // A checkpoint put again (an import merged into its thread) keeps the
  // chain it has, or has none: its children's chains hash it. Only if it is
  // this very checkpoint (its seal covers its chain and parent link).
  if (self?.parent_checkpoint_id === parentId) {
    const sealed = await decodeCheckpoint(serde, self).catch(() => undefined);
    if (sealed && sameVersions(fields.channel_versions, sealed.channel_versions ?? {})) {
      return remember(ctx, threadId, checkpointNs, id, self.chain);
    }
  }
  if (parent === undefined) return remember(ctx, threadId, checkpointNs, id, undefined);
  // Throws DecryptionError if the parent's chain (or any clear field it seals) was altered.
  await decodeCheckpoint(serde, parent);
  return remember(ctx, threadId, checkpointNs, id, chainOf(fields, parent.chain));
}

/**
 * The `chain` of a row about to be put by an encrypting saver, remembered
 * for its children; undefined when the row gets none (its parent row is
 * missing).
 */
export function chainFor(
  ctx: SaverContext,
  serde: SerializerProtocol,
  threadId: string,
  checkpointNs: string,
  fields: ChainFields,
): string | undefined | Promise<string | undefined> {
  const parentId = fields.parent_checkpoint_id;
  const cached = parentId === undefined ? undefined : known.get(ctx)?.get(keyOf(threadId, checkpointNs, parentId));
  // The common case (the parent is this saver's previous put) needs no await.
  if (parentId === undefined || cached !== undefined) {
    return remember(ctx, threadId, checkpointNs, fields.checkpoint_id, chainOf(fields, cached));
  }
  return storedChain(ctx, serde, threadId, checkpointNs, fields, parentId);
}

/**
 * Remembers `chain` as the chain of row `checkpointId` for its children, or
 * forgets the row's when it gets none (a chain remembered from an earlier
 * put, before a delete and a restore, would be sealed into its children).
 */
function remember<C extends string | undefined>(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  checkpointId: string,
  chain: C,
): C {
  let chains = known.get(ctx);
  if (!chains) {
    const made = (chains = new Map());
    known.set(ctx, made);
    // Another tab may have put a row this saver remembers again, with
    // another chain (a restore: delete, then import). Its change message
    // comes after its commit, so a put racing it can still miss it.
    ctx.feed.subscribe((change) => {
      if (change.remote) made.clear();
    });
  }
  const key = keyOf(threadId, checkpointNs, checkpointId);
  chains.delete(key);
  if (chain === undefined) return chain;
  if (chains.size >= MAX_KNOWN) chains.delete(chains.keys().next().value!);
  // Remembered before the put commits: a chain depends only on the fields
  // hashed, so if this put rolls back, a later put of the same row has it too.
  chains.set(key, chain);
  return chain;
}
