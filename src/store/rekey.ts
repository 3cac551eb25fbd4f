/**
 * Key changes of an encrypted store: compare-and-swap access to its key
 * record, and the paged re-encryption of items and vectors.
 */
import type { KeyRecord } from "../serde/protocol.js";
import type { KeyRecordAccess, ValueRewriter } from "../serde/rekey.js";
import { sameClone } from "../core/equality.js";
import type { Database } from "../idb/database.js";
import { valueRow, vectorRow } from "./codec.js";
import { META, type ItemRow, type StoreSchema, type VectorRow } from "./schema.js";
import { touchNamespaces } from "./write.js";

/** Rows per transaction when `rekey` re-encrypts a store. */
export const REKEY_PAGE = 256;

/** Compare-and-swap access to the serializer's key record; a swap drops the bound serializer. */
export function storeKeyRecords(db: Database<StoreSchema>, onSwap: () => void): KeyRecordAccess {
  return {
    read: () =>
      db.read(
        ["meta"],
        (tx) => tx.objectStore("meta").get(META.serdeKey) as Promise<KeyRecord | undefined>,
        "read the key record",
      ),
    replace: async (expected, next) => {
      const swapped = await db.write(
        ["meta"],
        async (tx) => {
          const meta = tx.objectStore("meta");
          if (!sameClone(await meta.get(META.serdeKey), expected)) return false;
          await meta.put(next, META.serdeKey);
          return true;
        },
        "store the key record",
      );
      if (swapped) onSwap();
      return swapped;
    },
  };
}

/**
 * One pass of `rewrite` over the serialized values of `items` or
 * `vectors`, a page at a time: read a page, re-encode outside any
 * transaction, then put back each row that did not change meanwhile.
 * Returns how many rows needed re-encoding (the next pass looks again at
 * those that changed).
 */
export async function rewriteAll(
  db: Database<StoreSchema>,
  storeName: "items" | "vectors",
  rewrite: ValueRewriter,
): Promise<number> {
  const keys = await db.read([storeName], (tx) => tx.objectStore(storeName).getAllKeys(), "list values to re-encrypt");
  let changed = 0;
  for (let start = 0; start < keys.length; start += REKEY_PAGE) {
    const page = keys.slice(start, start + REKEY_PAGE);
    const rows: (ItemRow | VectorRow | undefined)[] = await db.read(
      [storeName],
      (tx) => Promise.all(page.map((key) => tx.objectStore(storeName).get(key))),
      "read values to re-encrypt",
    );
    const updates: { before: ItemRow | VectorRow; after: ItemRow | VectorRow }[] = [];
    for (const row of rows) {
      if (!row?.typed) continue;
      const ref = storeName === "items" ? valueRow(row.namespace, row.key) : vectorRow(row.namespace, row.key);
      const typed = await rewrite(row.typed, ref);
      if (typed) updates.push({ before: row, after: { ...row, typed } });
    }
    if (!updates.length) continue;
    changed += updates.length;
    await db.write(
      [storeName, "namespaces", "meta"],
      async (tx) => {
        const objects = tx.objectStore(storeName);
        const current = await Promise.all(updates.map(({ before }) => objects.get([before.namespace, before.key])));
        const unchanged = updates.filter(({ before }, i) => sameClone(current[i], before));
        // New bytes: every cache of these namespaces (any tab) must reread them.
        await touchNamespaces(
          tx,
          unchanged.map(({ after }) => after.namespace),
        );
        await Promise.all(unchanged.map(({ after }) => objects.put(after as ItemRow & VectorRow)));
      },
      "re-encrypt store values",
    );
  }
  return changed;
}
