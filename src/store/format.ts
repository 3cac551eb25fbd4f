/**
 * The store database's format record, checked on open, and the binding of
 * its serializer to the database's key.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { bindSerializer, type BoundSerializer, type KeyRecord } from "../serde/protocol.js";
import type { Database } from "../idb/database.js";
import { peekObjectStores } from "../idb/open.js";
import { META, STORE_FORMAT_VERSION, type FormatRecord, type StoreSchema } from "./schema.js";
import { DecryptionError, IndexedDBCheckpointError } from "../core/errors.js";

/** The object stores a store database must have. */
export const STORE_NAMES = ["items", "vectors", "namespaces", "meta"] as const;

/** Refuses a database of another kind, a newer format, or the other value encoding. */
export function checkFormat(dbName: string, format: FormatRecord, mode: FormatRecord["values"]): void {
  if (format?.kind !== "langgraph-store") {
    throw new IndexedDBCheckpointError(
      `IndexedDB database "${dbName}" holds another library's data (no IndexedDBStore format record). Give the store its own dbName.`,
    );
  }
  if (format.version > STORE_FORMAT_VERSION) {
    throw new IndexedDBCheckpointError(
      `IndexedDB database "${dbName}" was written by a newer version of langgraph-checkpoint-indexeddb (store format ${format.version}, this one reads ${STORE_FORMAT_VERSION}). Upgrade the package.`,
    );
  }
  if (format.values !== mode) {
    throw new IndexedDBCheckpointError(
      format.values === "native"
        ? `IndexedDB database "${dbName}" was created without a serializer (values stored as structured clones), but this IndexedDBStore has a \`serde\`. Open it without \`serde\`, or copy its items into a new database (search and put) to serialize or encrypt them.`
        : `IndexedDB database "${dbName}" was created with a serializer (values stored as bytes, possibly encrypted), but this IndexedDBStore has no \`serde\`. Pass the same \`serde\` as when it was created.`,
    );
  }
}

/** The error for a database that lacks the store's object stores. */
function notAStore(dbName: string, missing: readonly string[], cause?: unknown): IndexedDBCheckpointError {
  return new IndexedDBCheckpointError(
    `IndexedDB database "${dbName}" is not an IndexedDBStore database (it has no ${missing.join(", ")} object store); it may belong to an IndexedDBSaver or another library. Give the store its own dbName.`,
    cause === undefined ? undefined : { cause },
  );
}

/** Opens the store database once: checks its stores and format record, binds the serializer to its key. */
export async function openStore(
  db: Database<StoreSchema>,
  serde: SerializerProtocol | undefined,
  indexedDB: IDBFactory | undefined,
): Promise<BoundSerializer | undefined> {
  let connection;
  try {
    connection = await db.connection();
  } catch (error) {
    // At a higher version than ours: a newer store, or (the usual mistake)
    // an IndexedDBSaver's database under the same dbName. Say which.
    if ((error as { cause?: { name?: string } } | null)?.cause?.name === "VersionError") {
      const names = await peekObjectStores(db.name, indexedDB).catch(() => undefined);
      if (names) {
        const missing = STORE_NAMES.filter((name) => !names.includes(name));
        if (missing.length) throw notAStore(db.name, missing, error);
      }
    }
    throw error;
  }
  const missing = STORE_NAMES.filter((name) => !connection.objectStoreNames.contains(name));
  if (missing.length) throw notAStore(db.name, missing);
  const mode: FormatRecord["values"] = serde ? "serde" : "native";
  await db.write(
    ["meta"],
    async (tx) => {
      const meta = tx.objectStore("meta");
      const [stored, keyRecord] = await Promise.all([meta.get(META.format), meta.getKey(META.serdeKey)]);
      let format = stored as FormatRecord | undefined;
      // A key record means encrypted values, whatever the format record says:
      // only a store with a serde writes one. A "native" record beside it was
      // altered outside the store (so that it be opened without its key and
      // planted plaintext items be read): put it right, or refuse without a key.
      if (keyRecord !== undefined && (mode === "native" || format?.values === "native")) {
        if (mode === "native") {
          throw new DecryptionError(
            `IndexedDB database "${db.name}" is encrypted (it holds an encryption key record): open it with its EncryptedSerializer. Nothing was read.`,
          );
        }
        format = undefined;
      }
      if (format === undefined) {
        const record: FormatRecord = { kind: "langgraph-store", version: STORE_FORMAT_VERSION, values: mode };
        await meta.put(record, META.format);
        return;
      }
      checkFormat(db.name, format, mode);
    },
    "open the store",
  );
  if (!serde) return undefined;
  return bindSerializer(
    serde,
    () =>
      db.read(
        ["meta"],
        (tx) => tx.objectStore("meta").get(META.serdeKey) as Promise<KeyRecord | undefined>,
        "read the store's key record",
      ),
    (record) =>
      db.write(
        ["meta"],
        async (tx) => {
          const meta = tx.objectStore("meta");
          // Check and add in one transaction: two tabs never both add a key.
          if ((await meta.getKey(META.serdeKey)) !== undefined) return false;
          await meta.put(record, META.serdeKey);
          return true;
        },
        "store the store's key record",
      ),
    async (record) => {
      await db.write(
        ["meta"],
        (tx) => tx.objectStore("meta").put(record, META.serdeKey),
        "store the store's key record",
      );
    },
    {
      name: db.name,
      populated: () => db.read(["items"], async (tx) => (await tx.objectStore("items").count()) > 0, "count items"),
    },
  );
}
