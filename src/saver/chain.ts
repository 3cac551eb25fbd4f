/**
 * Row binding versions 3 and 4: the hash chain of parent links (issue 11)
 * and of the pending writes each step consumed (issue 23, finding 8).
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
 * Version 4 (`lgcp-chain.2`) also hashes the row's clear `parent_writes`:
 * the keys (task id, idx, channel) of the pending writes its parent held
 * when this row was put, sorted. A write's value is sealed with its row, so
 * a writer without the key can only delete writes or move them between
 * keys; once a walk has proven a row's chain, every write it lists must be
 * there, and a walk that misses one fails closed. The list is a lower
 * bound, never the whole set: writes added to the parent later (a sync
 * merge, a late task, a replaced special write at the same key) are not in
 * it and need not be (see docs/encryption.md, "Row binding version 4").
 *
 * Loaded lazily: only encrypting savers write chains, and only walks check them.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { SaverContext } from "./context.js";
import { decodeCheckpoint, encode, rowRef, sameVersions } from "../rows/codec.js";
import { prefixBounds } from "./keys.js";
import { toHex, utf8 } from "../core/bytes.js";
import { subtle } from "../serde/encrypted/webcrypto.js";
import type { CheckpointRow, Version, WriteKey, WriteRow } from "../rows/shapes.js";
import { pendingSeal, type SealNote } from "./pending-seals.js";
import { checkpointMapKey } from "./keys.js";

/** The fields of a row its chain covers (`parent_writes` from version 4 on). */
export type ChainFields = Pick<CheckpointRow, "checkpoint_id" | "parent_checkpoint_id" | "channel_versions"> &
  Partial<Pick<CheckpointRow, "parent_writes">>;

/** What a put seals into a row: its chain, and from version 4 on the parent's writes it covers. */
export interface Chained {
  chain: string;
  parent_writes?: WriteKey[];
}

/**
 * A version in the hash input: 1 and "1" are different versions, and -0 is 0
 * as an IndexedDB key. Anything else (only an edited row holds it) gets a
 * tag no written row has: ["v1"] or a String object would otherwise hash as
 * "v1" while the walk finds no blob under that version.
 */
function tagged(version: Version): string {
  return typeof version === "number" ? `n${String(version)}` : typeof version === "string" ? `s${version}` : "?";
}

/** True for a write key as the saver writes it; anything else only an edited row holds. */
function isWriteKey(entry: unknown): entry is WriteKey {
  return (
    Array.isArray(entry) &&
    entry.length === 3 &&
    typeof entry[0] === "string" &&
    Number.isSafeInteger(entry[1]) &&
    typeof entry[2] === "string"
  );
}

/**
 * A row's `parent_writes` as hashed: each key as stored, in the stored
 * order; an entry (or a list) of any other shape is `"?"`, which no written
 * row holds, so an edited list never hashes like a written one (and a
 * structured-clone cycle planted there cannot hang or throw).
 */
function coverageOf(list: unknown): unknown {
  if (!Array.isArray(list)) return "?";
  // As written (every walk hashes every ancestor's list): no copy.
  return list.every(isWriteKey) ? list : list.map((entry) => (isWriteKey(entry) ? entry : "?"));
}

/**
 * The text hashed for a row: JSON of strings (and, from version 4, write
 * positions), so it is unambiguous and the same everywhere (hashed as
 * UTF-8). A row with `parent_writes` hashes as version 4 (`lgcp-chain.2`),
 * one without as version 3: removing the list changes the text, so it
 * cannot turn a version 4 row into a version 3 one.
 */
export function chainText(fields: ChainFields, parentChain: string | undefined): string {
  const plain: unknown = fields.channel_versions;
  // Not an object: only an edited row holds that, and "?" is no written row's versions.
  const versions =
    typeof plain !== "object" || plain === null
      ? "?"
      : Object.keys(plain)
          .sort()
          .map((channel) => [channel, tagged(fields.channel_versions[channel]!)]);
  // A parent's chain edited into something else than a string (a bigint, which JSON refuses, or a cyclic
  // object) hashes as "?", as no written row's does; none stays null.
  const common = [
    fields.checkpoint_id,
    fields.parent_checkpoint_id ?? null,
    versions,
    (parentChain as unknown) && typeof parentChain != "string" ? "?" : (parentChain ?? null),
  ];
  if (fields.parent_writes === undefined) return JSON.stringify(["lgcp-chain.1", ...common]);
  return JSON.stringify(["lgcp-chain.2", ...common, coverageOf(fields.parent_writes)]);
}

/** Write keys in the order a row lists them: by task id, then idx, then channel. */
export function sortedWriteKeys(keys: Iterable<WriteKey>): WriteKey[] {
  return [...keys].sort((a, b) =>
    a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] !== b[1] ? a[1] - b[1] : a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0,
  );
}

/**
 * The `chain` of a row with these fields whose parent's chain is
 * `parentChain` (undefined: a root, or a parent without one): WebCrypto's
 * SHA-256, as hex. Asynchronous: a walk starts its rows' hashes while its
 * last reads are out and checks them after (verify-links.ts), and a put
 * remembers the promise at once for its child (see {@link remember}).
 */
export async function chainOf(fields: ChainFields, parentChain: string | undefined): Promise<string> {
  return toHex(new Uint8Array(await subtle().digest("SHA-256", utf8(chainText(fields, parentChain)))));
}

/**
 * Chains this saver wrote or proved, per context: a put's parent is almost
 * always the previous put. Kept as promises: a row's chain is remembered
 * the moment its put asks for it, before its hash is done.
 */
const known = new WeakMap<SaverContext, Map<string, Promise<string>>>();

/**
 * Per context, by checkpoint: the keys of the pending writes this saver
 * committed to it (putWrites' fast path), so the put of its child lists
 * them without a read. A write stays once stored (writes only add; a
 * special write is replaced at the same key) until its checkpoint or
 * thread is deleted, which clears this (see {@link tablesOf}).
 */
const committed = new WeakMap<SaverContext, Map<string, Map<string, WriteKey>>>();

/** Chains remembered per saver (the heads of its busiest threads). */
const MAX_KNOWN = 256;

/** A write's key (task id, idx, channel), as a row lists it. */
const writeKeyOf = (write: WriteRow): WriteKey => [write.task_id, write.idx, write.channel];

/**
 * Both tables of a context, made on first use. Another tab may have put a
 * row this saver remembers again, with another chain (a restore: delete,
 * then import), or deleted writes with their checkpoint: its change message
 * comes after its commit, so a put racing it can still miss it. This
 * saver's own deletes (thread, runs, prune) may remove writes it noted.
 */
function tablesOf(ctx: SaverContext): {
  chains: Map<string, Promise<string>>;
  writes: Map<string, Map<string, WriteKey>>;
} {
  let chains = known.get(ctx);
  let writes = committed.get(ctx);
  if (!chains || !writes) {
    const made = { chains: new Map<string, Promise<string>>(), writes: new Map<string, Map<string, WriteKey>>() };
    known.set(ctx, (chains = made.chains));
    committed.set(ctx, (writes = made.writes));
    ctx.feed.subscribe((change) => {
      if (change.remote) made.chains.clear();
      if (change.remote || change.kind !== "put") made.writes.clear();
    });
  }
  return { chains, writes };
}

/**
 * Notes pending writes just committed (putWrites' fast path, with the
 * result of storing each), for the `parent_writes` of their checkpoint's
 * children. Writes that reach the
 * store another way (the careful path, a sync pull, an import) are not
 * noted: a child lists them only if it reads its parent's writes (a put
 * whose parent's chain is not remembered).
 */
export function noteWrites(ctx: SaverContext, rows: readonly WriteRow[], results: readonly unknown[]): void {
  // Only a context that put or proved a chain has children to list them
  // (and a plain saver in the same page never gets a table or a listener).
  const writes = committed.get(ctx);
  if (!writes) return;
  for (const [i, write] of rows.entries()) {
    // A regular write a first one kept out (addIfAbsent: false) is not what is stored under its key.
    if (results[i] === false) continue;
    const key = checkpointMapKey(write.thread_id, write.checkpoint_ns, write.checkpoint_id);
    let keys = writes.get(key);
    if (!keys) {
      if (writes.size >= MAX_KNOWN) writes.delete(writes.keys().next().value!);
      writes.set(key, (keys = new Map()));
    }
    keys.set(JSON.stringify([write.task_id, write.idx]), writeKeyOf(write));
  }
}

/**
 * The chain of a row whose parent's chain this saver does not remember,
 * from the stored rows. The parent's `chain` is trusted once its checkpoint
 * decrypted (its seal covers it); its stored writes, read with it, are
 * listed. No parent row: the new row gets no chain (binding version 2), as
 * a chain over a parent that may appear later (with other fields) could
 * not be checked.
 */
async function storedChain(
  ctx: SaverContext,
  serde: SerializerProtocol,
  threadId: string,
  checkpointNs: string,
  fields: ChainFields,
): Promise<Chained | undefined> {
  const parentId = fields.parent_checkpoint_id;
  const bounds = prefixBounds(threadId, checkpointNs, parentId ?? "");
  const [parent, self, parentWrites] = await ctx.db.read(
    ["checkpoints", "writes"],
    (tx) => {
      const rows = tx.objectStore("checkpoints");
      return Promise.all([
        parentId === undefined ? undefined : rows.get([threadId, checkpointNs, parentId]),
        rows.get([threadId, checkpointNs, fields.checkpoint_id]),
        parentId === undefined ? [] : tx.objectStore("writes").getAll(ctx.db.ranges.bound(bounds.lower, bounds.upper)),
      ]);
    },
    "read the parent checkpoint",
  );
  const id = fields.checkpoint_id;
  // A checkpoint put again (an import merged into its thread) keeps the
  // chain it has, or has none: its children's chains hash it. Only if it is
  // this very checkpoint (its seal covers its chain and parent link).
  if (self !== undefined && self.parent_checkpoint_id === parentId) {
    const sealed = await decodeCheckpoint(serde, self).catch(() => undefined);
    if (sealed && sameVersions(fields.channel_versions, sealed.channel_versions ?? {})) {
      const kept: Chained | undefined = self.chain === undefined ? undefined : { chain: self.chain };
      if (kept && self.parent_writes !== undefined) kept.parent_writes = self.parent_writes;
      return remember(ctx, threadId, checkpointNs, id, kept && Promise.resolve(kept));
    }
  }
  if (parentId === undefined) return remember(ctx, threadId, checkpointNs, id, chained(fields, [], undefined));
  if (parent === undefined) return remember(ctx, threadId, checkpointNs, id, undefined);
  // Throws DecryptionError if the parent's chain (or any clear field it seals) was altered.
  await decodeCheckpoint(serde, parent);
  return remember(ctx, threadId, checkpointNs, id, chained(fields, parentWrites.map(writeKeyOf), parent.chain));
}

/**
 * The version 4 chain of a row listing `parentWrites` (taken now: the list
 * is what is stored when the row is put), over its parent's chain.
 */
async function chained(
  fields: ChainFields,
  parentWrites: Iterable<WriteKey>,
  parentChain: string | undefined | Promise<string>,
): Promise<Chained> {
  const listed = { ...fields, parent_writes: sortedWriteKeys(parentWrites) };
  return { chain: await chainOf(listed, await parentChain), parent_writes: listed.parent_writes };
}

/**
 * The chain of a row about to be put by an encrypting saver, and the
 * parent's writes it lists, remembered for its children; undefined when
 * the row gets none (its parent row is missing). The list depends on when
 * the row is put, so a checkpoint put again (an import merged into its
 * thread) must keep the chain it has, which its children hash: `put` finds
 * the row in its transaction and asks again with `stored`.
 */
async function chainFor(
  ctx: SaverContext,
  serde: SerializerProtocol,
  threadId: string,
  checkpointNs: string,
  fields: ChainFields,
  stored = false,
  note?: SealNote,
): Promise<Chained | undefined> {
  const parentId = fields.parent_checkpoint_id;
  const tables = tablesOf(ctx);
  const parentKey = parentId === undefined ? undefined : checkpointMapKey(threadId, checkpointNs, parentId);
  let cached = parentKey === undefined ? undefined : tables.chains.get(parentKey);
  // The parent's put, started before this one, may not have reached its seal: its chain is remembered
  // then. Read from IndexedDB now, the parent would not be stored yet, and this row would get no chain.
  const parentSeal =
    cached !== undefined || stored || note === undefined || parentId === undefined
      ? undefined
      : pendingSeal(ctx, threadId, checkpointNs, parentId, note.seq);
  if (parentSeal) {
    await parentSeal;
    cached = tables.chains.get(parentKey!);
  }
  // The common case (the parent is this saver's previous put) reads nothing.
  if (stored || (parentKey !== undefined && cached === undefined)) {
    return storedChain(ctx, serde, threadId, checkpointNs, fields);
  }
  const noted = parentKey === undefined ? undefined : tables.writes.get(parentKey);
  return remember(ctx, threadId, checkpointNs, fields.checkpoint_id, chained(fields, noted?.values() ?? [], cached));
}

/**
 * Seals `row` (about to be put by an encrypting saver) with its chain:
 * sets its `chain` and `parent_writes` (or removes them: no chain) and its
 * `checkpoint`, the sealed `checkpoint` value. `stored`: see {@link chainFor}; `note`: the put's, whose earlier puts' seals it waits for (pending-seals.ts).
 */
export async function seal(
  ctx: SaverContext,
  serde: SerializerProtocol,
  row: CheckpointRow,
  checkpoint: unknown,
  stored = false,
  note?: SealNote,
): Promise<void> {
  const { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: id, parent_checkpoint_id: parentId } = row;
  const fields = { checkpoint_id: id, parent_checkpoint_id: parentId, channel_versions: row.channel_versions };
  const chained = await chainFor(ctx, serde, threadId, checkpointNs, fields, stored, note);
  const ref = rowRef.checkpoint(threadId, checkpointNs, id, parentId, chained?.chain);
  row.checkpoint = await encode(serde, "serialize the checkpoint", checkpoint, ref);
  delete row.chain;
  delete row.parent_writes;
  if (chained) row.chain = chained.chain;
  if (chained?.parent_writes) row.parent_writes = chained.parent_writes;
}

/**
 * Remembers `chained` as the chain of row `checkpointId` for its children,
 * or forgets the row's when it gets none (a chain remembered from an earlier
 * put, before a delete and a restore, would be sealed into its children).
 * Remembered at once, as a promise: the put of a child that starts before
 * this row's hash is done hashes over it, as it did when hashing was
 * synchronous, instead of reading a parent not yet stored.
 */
function remember(
  ctx: SaverContext,
  threadId: string,
  checkpointNs: string,
  checkpointId: string,
  chained: Promise<Chained> | undefined,
): Promise<Chained | undefined> {
  const { chains } = tablesOf(ctx);
  const key = checkpointMapKey(threadId, checkpointNs, checkpointId);
  chains.delete(key);
  if (chained === undefined) return Promise.resolve(undefined);
  if (chains.size >= MAX_KNOWN) chains.delete(chains.keys().next().value!);
  // Remembered before the put commits. If it rolls back, a later put of
  // the same row computes and remembers its chain again (its list may have
  // grown); only a child put in between, over a parent that failed, would
  // hash a chain no stored row has, and its walks would fail closed.
  const chain = chained.then((made) => made.chain);
  chains.set(key, chain);
  // A hash that failed (no WebCrypto) is not remembered; its put reports the failure.
  chain.catch(() => chains.get(key) === chain && chains.delete(key));
  return chained;
}
