/**
 * Key changes of an encrypted database: `changeKey` re-wraps the data key
 * under the new passphrase, then (unless `rewrapOnly`) rotates it as `rekey`
 * does: every stored value re-encrypted under a fresh one, a page at a time.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { sameClone } from "../core/equality.js";
import type { RowRef } from "../serde/protocol.js";
import {
  changeDatabaseKey,
  rekeyDatabase,
  type ChangeKeyOptions,
  type KeyRecordAccess,
  type StoredValue,
  type ValueRewriter,
} from "../serde/rekey.js";
import { DecryptionError } from "../core/errors.js";
import type { SaverContext } from "./context.js";
import { checkpointRefs, rowRef, writeRefs } from "../rows/codec.js";
import type { SaverSchema } from "./schema.js";
import {
  inlineBlobs,
  isTombstoneWrite,
  type BlobRow,
  type CheckpointRow,
  type ThreadRow,
  type WriteRow,
} from "../rows/shapes.js";
import { storePut } from "../idb/requests.js";
import { withKeyLock } from "../serde/key-change.js";

/** Rows per transaction when `rekey` re-encrypts a store. */
const REKEY_PAGE = 256;

/** Hands the database to `next` and rotates its data key (see `IndexedDBSaver.changeKey`). */
export function changeKey(ctx: SaverContext, next: SerializerProtocol, options: ChangeKeyOptions = {}): Promise<void> {
  // One key change at a time across tabs: a second one waits for this one.
  return withKeyLock(ctx.db.name, async () => {
    // The current key must open the record (checked by the re-wrap), unless an
    // interrupted change already handed it to `next`: then this resumes.
    const keyed = await changeDatabaseKey(ctx.slot.get(), next, keyRecords(ctx));
    ctx.slot.set(next);
    ctx.unbind();
    if (keyed && !options.rewrapOnly) await rotate(ctx);
  });
}

/** Re-encrypts every stored value under a fresh data key (see `IndexedDBSaver.rekey`). */
export function rekey(ctx: SaverContext): Promise<void> {
  return withKeyLock(ctx.db.name, () => rotate(ctx));
}

/**
 * Compare-and-swap access to the database's key record: a swap forgets the
 * bound serializer and tells other tabs.
 */
function keyRecords(ctx: SaverContext): KeyRecordAccess {
  return {
    read: () => ctx.readKeyRecord(),
    replace: async (expected, next) => {
      const swapped = await ctx.storeKeyRecord(next, async (tx) =>
        sameClone((await tx.objectStore("meta").get("key"))?.value, expected),
      );
      if (swapped) {
        ctx.unbind();
        ctx.feed.emitKeyChange();
      }
      return swapped;
    },
  };
}

/** `rekey`, with the key-change lock held. */
async function rotate(ctx: SaverContext): Promise<void> {
  await ctx.serde();
  await rekeyDatabase(ctx.slot.get(), keyRecords(ctx), async (rewrite) => {
    let changed = 0;
    changed += await rewriteStore(ctx, "checkpoints", rewrite);
    changed += await rewriteStore(ctx, "blobs", rewrite);
    changed += await rewriteStore(ctx, "writes", rewrite);
    changed += await rewriteStore(ctx, "threads", rewrite);
    return changed;
  });
}

/**
 * One pass of `rewrite` over a store, a page at a time: read a page, re-encode
 * outside any transaction, then put back each row that has not changed
 * meanwhile. Returns how many rows needed re-encoding (written or skipped
 * because they changed: the next pass looks at those again).
 */
async function rewriteStore<S extends "checkpoints" | "blobs" | "writes" | "threads">(
  ctx: SaverContext,
  store: S,
  rewrite: ValueRewriter,
): Promise<number> {
  const keys = await ctx.db.read([store], (tx) => tx.objectStore(store).getAllKeys(), "list rows to re-encrypt");
  let changed = 0;
  for (let start = 0; start < keys.length; start += REKEY_PAGE) {
    const page = keys.slice(start, start + REKEY_PAGE);
    const rows = await ctx.db.read(
      [store],
      (tx) => Promise.all(page.map((key) => tx.objectStore(store).get(key))),
      "read rows to re-encrypt",
    );
    const updates: { key: (typeof keys)[number]; before: unknown; after: unknown }[] = [];
    for (const [i, row] of rows.entries()) {
      if (row === undefined) continue;
      const after = await rewriteRow(store, row as SaverSchema[S]["value"], rewrite);
      if (after !== undefined) updates.push({ key: page[i]!, before: row, after });
    }
    if (updates.length === 0) continue;
    changed += updates.length;
    await ctx.db.write(
      [store],
      async (tx) => {
        const objects = tx.objectStore(store);
        const current = await Promise.all(updates.map(({ key }) => objects.get(key)));
        await Promise.all(
          updates.map(({ before, after }, i) =>
            sameClone(current[i], before) ? storePut(objects, after as SaverSchema[S]["value"]) : undefined,
          ),
        );
      },
      "store re-encrypted rows",
    );
  }
  return changed;
}

/**
 * Rewrites a value bound under binding version 2, or, for a row written
 * before it, version 1 (then it stays bound so: its clear fields were never
 * part of its binding).
 */
async function rewriteEither(
  rewrite: ValueRewriter,
  value: StoredValue,
  [current, legacy]: [RowRef, RowRef?],
): Promise<[string, Uint8Array] | undefined> {
  try {
    return await rewrite(value, current);
  } catch (error) {
    if (!(error instanceof DecryptionError) || legacy === undefined) throw error;
    try {
      return await rewrite(value, legacy);
    } catch {
      throw error;
    }
  }
}

/**
 * A stored row with every serialized value passed through `rewrite` (with the
 * row it is bound to), or `undefined` when none changed.
 */
async function rewriteRow<S extends "checkpoints" | "blobs" | "writes" | "threads">(
  store: S,
  row: SaverSchema[S]["value"],
  rewrite: ValueRewriter,
): Promise<SaverSchema[S]["value"] | undefined> {
  switch (store) {
    case "checkpoints": {
      const r = row as CheckpointRow;
      const inline = inlineBlobs(r);
      // A value held inline at a channel the row's clear versions do not name (an edit removed it, or all of
      // them) is bound to a version this pass cannot know: re-encrypting the rest and keeping it as it is
      // would leave it under the retired key, lost once the record drops that key. Fail closed instead.
      if (typeof r.inline === "object" && r.inline !== null && Object.keys(r.inline).length > inline.length) {
        throw new DecryptionError(
          `Checkpoint ${String(r.checkpoint_id)} of thread "${String(r.thread_id)}" (namespace "${String(r.checkpoint_ns)}") holds a value inline at a channel its clear versions do not name: the row was altered outside the saver. Nothing more was re-encrypted; the data key is still being replaced.`,
        );
      }
      const [checkpoint, metadata, values] = await Promise.all([
        rewriteEither(rewrite, r.checkpoint, checkpointRefs(r)),
        rewrite(r.metadata, rowRef.metadata(r.thread_id, r.checkpoint_ns, r.checkpoint_id)),
        // Row format 2: values held inline are bound as their blob rows.
        Promise.all(
          inline.map((b) => rewrite(b.value, rowRef.blob(b.thread_id, b.checkpoint_ns, b.channel, b.version))),
        ),
      ]);
      if (!checkpoint && !metadata && !values.some(Boolean)) return undefined;
      const rewritten = { ...r, checkpoint: checkpoint ?? r.checkpoint, metadata: metadata ?? r.metadata };
      if (inline.length > 0) {
        rewritten.inline = Object.fromEntries(inline.map((b, i) => [b.channel, values[i] ?? b.value]));
      }
      return rewritten as SaverSchema[S]["value"];
    }
    case "blobs": {
      const r = row as BlobRow;
      const value = await rewrite(r.value, rowRef.blob(r.thread_id, r.checkpoint_ns, r.channel, r.version));
      return value ? ({ ...r, value } as SaverSchema[S]["value"]) : undefined;
    }
    case "writes": {
      const r = row as WriteRow;
      if (isTombstoneWrite(r)) return undefined;
      const value = await rewriteEither(rewrite, r.value, writeRefs(r));
      return value ? ({ ...r, value } as SaverSchema[S]["value"]) : undefined;
    }
    default: {
      const r = row as ThreadRow;
      if (!r.latest) return undefined;
      const metadata = await rewrite(
        r.latest.metadata,
        rowRef.metadata(r.thread_id, r.latest.checkpoint_ns, r.latest.checkpoint_id),
      );
      return metadata ? ({ ...r, latest: { ...r.latest, metadata } } as SaverSchema[S]["value"]) : undefined;
    }
  }
}
