/**
 * `IndexedDBStore`: LangGraph's long-term memory store (`BaseStore`) on
 * IndexedDB, answering exactly as `InMemoryStore` does, but persistent and
 * shared by every tab of the origin.
 *
 * How a `batch` runs (the one rule of IndexedDB: nothing but requests inside
 * a transaction):
 * 1. validate every operation, as `InMemoryStore` does, before any I/O;
 * 2. embed (query texts and the texts of the items being put) and, with a
 *    serializer, serialize values and vectors;
 * 3. one transaction over the object stores the batch needs: every read
 *    first (so reads see the state before the batch, as upstream), then
 *    every write;
 * 4. after it completes: decode (serializer), filter, rank, page.
 *
 * Layout and key ranges: `store-schema.ts`. Searches: `store-search.ts`,
 * with the query semantics (quirks included) in `store-query.ts` and the
 * cache in `store-cache.ts`. Row decoding: `store-codec.ts`.
 */
import {
  BaseStore,
  validateNamespace,
  type GetOperation,
  type IndexConfig,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import {
  bindSerializer,
  changeDatabaseKey,
  dumpForRow,
  rekeyDatabase,
  type KeyRecord,
  type KeyRecordAccess,
  type ValueRewriter,
} from "../serde/protocol.js";
import { sameClone } from "../core/equality.js";
import { Database, type Durability, type Tx } from "../idb/database.js";
import { IndexedDBCheckpointError, SerializationError } from "../core/errors.js";
import { DEFAULT_CACHE_ITEMS, NamespaceCache } from "./cache.js";
import { itemId, namespaceId, toItem, valueRow, vectorRow } from "./codec.js";
import { norm, selectNamespaces } from "./query.js";
import {
  META,
  STORE_FORMAT_VERSION,
  STORE_UPGRADES,
  namespacePrefixRange,
  packVectors,
  type ClockRecord,
  type FormatRecord,
  type ItemRow,
  type NamespaceRow,
  type StoreSchema,
  type TypedBytes,
  type VectorRow,
} from "./schema.js";
import {
  finishSearch,
  planSearch,
  readSearch,
  type AnyTx,
  type ReadContext,
  type SearchPlan,
  type SearchRead,
} from "./search.js";
import { configPaths, overridePaths, textsToEmbed, type IndexPath } from "./text.js";

/** Options of {@link IndexedDBStore}. */
export interface IndexedDBStoreParams {
  /** The IndexedDB database name. Default `"langgraph-store"`. Give a saver and a store different names. */
  dbName?: string;
  /** An `IDBFactory`; default `globalThis.indexedDB` (tests pass fake-indexeddb's). */
  indexedDB?: IDBFactory;
  /**
   * Semantic search: the embeddings model, its vector size, and the value
   * fields to embed (default `["$"]`, the whole value). Vectors are stored,
   * so reopening the store never re-embeds. Construct every instance that
   * writes to one database with the same index: a put through an instance
   * without it leaves the item without vectors.
   */
  index?: IndexConfig;
  /**
   * A serializer for values (and vectors). Without one, values are stored as
   * structured clones: the fastest reads, for JSON-like values (plain
   * objects, arrays, strings, numbers, booleans, null, `Date`, `Map`…; class
   * instances come back as plain objects). With one (for example an
   * `EncryptedSerializer`), values and vectors are stored as its bytes, bound
   * to their row, and decoded after each read. A database keeps the choice
   * it was created with; namespaces, keys and timestamps stay readable.
   */
  serde?: SerializerProtocol;
  /** Durability hint of write transactions. */
  durability?: Durability;
  /**
   * How many items searches may keep in memory, per namespace: the whole
   * namespace, or the first items of it that a page read (least recently
   * used dropped first); 0 turns the cache off. Default 20,000. A cached
   * namespace is checked against the database in every search, so writes
   * from other instances and tabs are always seen. Each cached vector costs
   * `8 × dims` bytes.
   */
  cacheSize?: number;
}

/** The default database name. */
export const DEFAULT_STORE_DB_NAME = "langgraph-store";

/** The embedding side of the configuration, prepared once. */
interface PreparedIndex {
  config: IndexConfig;
  paths: IndexPath[];
}

/** A put after de-duplication, with everything computed before the transaction. */
interface PreparedPut {
  op: PutOperation;
  /** The vectors to store; undefined: the item has none (its old ones are deleted). */
  vectors?: NativeVectors;
  /** Serde format: the serialized value and vectors. */
  typedValue?: TypedBytes;
  typedVectors?: TypedBytes;
}

/** An item's vectors as computed before the transaction, back to back with their norms. */
interface NativeVectors {
  fields: string[];
  dims: number;
  vectors: Float64Array;
  norms: Float64Array;
}

/** One operation of a batch, validated and classified. */
type Planned =
  | { kind: "get"; op: GetOperation }
  | { kind: "search"; plan: SearchPlan }
  | { kind: "put" }
  | { kind: "list"; op: ListNamespacesOperation };

/** What one operation read inside the transaction. */
type ReadResult = ItemRow | undefined | SearchRead | string[][] | null;

/** The object stores a store database must have. */
const STORE_NAMES = ["items", "vectors", "namespaces", "meta"] as const;

/**
 * LangGraph long-term memory (`BaseStore`) persisted in IndexedDB: items in
 * namespaces (`["user-1", "memories"]`) shared by every thread, with filters
 * and optional semantic search. Answers are those of `InMemoryStore`:
 * same validation and errors, same order (namespaces in order of first use,
 * items in order of creation), same filter operators, same scores.
 *
 * The database opens on first use; `close()` releases it and a later call
 * reopens it. Searches keep what they read of each namespace (all of it,
 * or the first items a page needed) in a bounded memory cache
 * (`cacheSize`), checked against the database on every use.
 *
 * Where it differs from `InMemoryStore`, on purpose:
 * - a put replaces the item's vectors and a delete removes them, where
 *   upstream keeps old vectors forever (a re-put with `index: false`, or with
 *   fewer embedded fields, still ranks by the old text there);
 * - results are copies: a `get` inside a batch shows the item as it was
 *   before the batch, not as the batch's later puts left it;
 * - without `serde`, values are structured clones: JSON-like data and
 *   `Date`/`Map`/`Set`/typed arrays round-trip, class instances come back as
 *   plain objects, and functions are refused (`SerializationError`).
 *
 * @example
 * const store = new IndexedDBStore({
 *   dbName: "my-app-memory",
 *   index: { dims: 384, embeddings, fields: ["text"] },
 * });
 * const graph = builder.compile({ checkpointer, store });
 * // in a node: await config.store?.put([userId, "memories"], id, { text });
 * const hits = await store.search([userId, "memories"], { query: "favourite food", limit: 3 });
 */
export class IndexedDBStore extends BaseStore {
  readonly #db: Database<StoreSchema>;
  readonly #index: PreparedIndex | undefined;
  #serde: SerializerProtocol | undefined;
  readonly #cache: NamespaceCache;
  /** The open-time checks and the serializer bound to this database, cached. */
  #ready: Promise<SerializerProtocol | undefined> | undefined;

  constructor(params: IndexedDBStoreParams = {}) {
    super();
    const { index, serde } = params;
    if (index) {
      if (!index.embeddings || typeof index.embeddings.embedDocuments !== "function") {
        throw new Error(
          "IndexedDBStore: `index.embeddings` must be a LangChain Embeddings instance (with embedDocuments and embedQuery), for example `index: { dims: 1536, embeddings: new OpenAIEmbeddings() }`.",
        );
      }
      if (!Number.isInteger(index.dims) || index.dims <= 0) {
        throw new Error(
          `IndexedDBStore: \`index.dims\` must be the embeddings' vector size, a positive integer (got ${String(index.dims)}).`,
        );
      }
      this.#index = { config: index, paths: configPaths(index.fields) };
    }
    this.#serde = serde;
    this.#db = new Database<StoreSchema>({
      name: params.dbName ?? DEFAULT_STORE_DB_NAME,
      upgrades: STORE_UPGRADES,
      indexedDB: params.indexedDB,
      durability: params.durability,
    });
    const cacheSize = params.cacheSize ?? DEFAULT_CACHE_ITEMS;
    if (!(cacheSize >= 0)) {
      throw new Error(`IndexedDBStore: \`cacheSize\` must be a number of items, 0 or more (got ${String(cacheSize)}).`);
    }
    this.#cache = new NamespaceCache(cacheSize);
    // Another tab upgrading or deleting the database: what we knew may be gone.
    this.#db.onVersionChange(() => {
      this.#cache.clear();
      this.#ready = undefined;
    });
  }

  /** The semantic-search configuration, as `InMemoryStore.indexConfig`. */
  get indexConfig(): IndexConfig | undefined {
    return this.#index?.config;
  }

  /** The IndexedDB database name. */
  get dbName(): string {
    return this.#db.name;
  }

  /**
   * Runs get, search, put (and delete: a put of `null`) and listNamespaces
   * operations. Reads see the state before the batch's writes; several puts
   * of one item keep the last; everything shares one transaction.
   */
  async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const planned = this.#plan(operations);
    const puts = dedupePuts(operations);
    const searches = planned.flatMap((p) => (p.kind === "search" ? [p.plan] : []));
    // Embeddings and serialization happen before the transaction opens.
    await this.#embedQueries(searches);
    const prepared = await this.#embedPuts(puts);
    const serde = await this.#prepare();
    if (serde) await serializePuts(serde, prepared);

    const stores = new Set<(typeof STORE_NAMES)[number]>();
    for (const p of planned) {
      if (p.kind === "get") stores.add("items");
      if (p.kind === "list") stores.add("namespaces");
      if (p.kind === "search") {
        stores.add("items").add("namespaces");
        if (p.plan.queryVector) stores.add("vectors");
        // The store-wide generation, for the cache's namespace lists.
        if (this.#cache.enabled) stores.add("meta");
      }
    }
    if (prepared.length) STORE_NAMES.forEach((name) => stores.add(name));
    if (stores.size === 0) return planned.map(() => null) as OperationResults<Op>;

    const context: ReadContext = { ranges: this.#db.ranges, cache: this.#cache };
    const work = async (tx: AnyTx): Promise<ReadResult[]> => {
      // All reads first, so that they see the state before this batch.
      const reads = await Promise.all(planned.map((p) => readOne(tx, context, p)));
      if (prepared.length) await writePuts(tx as Tx<StoreSchema, "readwrite">, prepared);
      return reads;
    };
    const storeList = [...stores];
    const reads = prepared.length
      ? await this.#db.write(storeList, work, "write to the store")
      : await this.#db.read(storeList, work, "read the store");
    const results = await Promise.all(planned.map((p, i) => finish(p, reads[i]!, serde, this.#cache)));
    // Entries of the namespaces just written are stale (even one this batch's
    // search just cached, from before its writes): free them now.
    for (const put of prepared) this.#cache.delete(namespaceId(put.op.namespace));
    return results as OperationResults<Op>;
  }

  /**
   * Closes the database connection. The store stays usable: the next
   * operation reopens it.
   */
  async close(): Promise<void> {
    this.#ready = undefined;
    // The database may be deleted and made again before the next call, and
    // its generations would then start over: forget everything.
    this.#cache.clear();
    await this.#db.close();
  }

  /**
   * Opens the database and checks the serializer's key: with an
   * `EncryptedSerializer` and a wrong passphrase this rejects with
   * `DecryptionError` before any item is read. For unlock screens.
   */
  async unlock(): Promise<void> {
    await this.#prepare();
  }

  /**
   * Changes the passphrase or key of an encrypted store: `next` (an
   * `EncryptedSerializer` with the new passphrase or key) takes over. Only
   * the data key is re-wrapped, no item is re-encrypted; afterwards the old
   * passphrase no longer opens the database. Other tabs must reopen with
   * the new passphrase.
   *
   * @example
   * await store.changeKey(await EncryptedSerializer.fromPassphrase(newPassphrase, { salt }));
   */
  async changeKey(next: SerializerProtocol): Promise<void> {
    const current = this.#requireSerde("changeKey");
    await this.#prepare(); // the current key must open the database first
    await changeDatabaseKey(current, next, this.#keyRecords());
    this.#serde = next;
    this.#ready = undefined;
  }

  /**
   * Re-encrypts every stored value and vector set under a fresh data key
   * (the passphrase is unchanged); with `allowPlaintext: true` it also
   * finishes a migration from plaintext. Safe to interrupt: everything stays
   * readable, and a second call finishes the job. Run it with the app open
   * in one tab only.
   */
  async rekey(): Promise<void> {
    const serde = this.#requireSerde("rekey");
    await this.#prepare();
    await rekeyDatabase(serde, this.#keyRecords(), async (rewrite) => {
      const items = await this.#rewriteAll("items", rewrite);
      return items + (await this.#rewriteAll("vectors", rewrite));
    });
    // Cached rows hold the old ciphertext, which may no longer open.
    this.#cache.clear();
  }

  #requireSerde(method: string): SerializerProtocol {
    if (!this.#serde) {
      throw new TypeError(
        `IndexedDBStore.${method}: this store has no \`serde\`; keys belong to an encrypted store (\`serde: await EncryptedSerializer.fromPassphrase(...)\`).`,
      );
    }
    return this.#serde;
  }

  /** Compare-and-swap access to the serializer's key record; a swap drops the bound serializer. */
  #keyRecords(): KeyRecordAccess {
    return {
      read: () =>
        this.#db.read(["meta"], (tx) => tx.objectStore("meta").get(META.serdeKey) as Promise<KeyRecord | undefined>, "read the key record"),
      replace: async (expected, next) => {
        const swapped = await this.#db.write(
          ["meta"],
          async (tx) => {
            const meta = tx.objectStore("meta");
            if (!sameClone(await meta.get(META.serdeKey), expected)) return false;
            await meta.put(next, META.serdeKey);
            return true;
          },
          "store the key record",
        );
        if (swapped) this.#ready = undefined;
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
  async #rewriteAll(storeName: "items" | "vectors", rewrite: ValueRewriter): Promise<number> {
    const keys = await this.#db.read([storeName], (tx) => tx.objectStore(storeName).getAllKeys(), "list values to re-encrypt");
    let changed = 0;
    for (let start = 0; start < keys.length; start += REKEY_PAGE) {
      const page = keys.slice(start, start + REKEY_PAGE);
      const rows: (ItemRow | VectorRow | undefined)[] = await this.#db.read(
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
      await this.#db.write(
        [storeName, "namespaces", "meta"],
        async (tx) => {
          const objects = tx.objectStore(storeName);
          const current = await Promise.all(updates.map(({ before }) => objects.get([before.namespace, before.key])));
          const unchanged = updates.filter(({ before }, i) => sameClone(current[i], before));
          // New bytes: every cache of these namespaces (any tab) must reread them.
          await touchNamespaces(tx, unchanged.map(({ after }) => after.namespace));
          await Promise.all(unchanged.map(({ after }) => objects.put(after as ItemRow & VectorRow)));
        },
        "re-encrypt store values",
      );
    }
    return changed;
  }

  /** Validates every operation (same checks and messages as `InMemoryStore`) and plans it. */
  #plan(operations: readonly Operation[]): Planned[] {
    return operations.map((op): Planned => {
      if ("namespace" in op) validateItemNamespace(op.namespace);
      if ("key" in op && "namespace" in op && !("value" in op)) return { kind: "get", op };
      if ("namespacePrefix" in op) {
        if (op.namespacePrefix.length > 0) validateItemNamespace(op.namespacePrefix);
        return { kind: "search", plan: planSearch(op, this.#serde !== undefined) };
      }
      if ("value" in op) return { kind: "put" };
      if ("matchConditions" in op || "maxDepth" in op || "limit" in op) return { kind: "list", op };
      throw new Error(`IndexedDBStore: unknown operation ${JSON.stringify(op)}.`);
    });
  }

  /** Embeds each distinct query of the ranked searches (when an index is configured). */
  async #embedQueries(searches: SearchPlan[]): Promise<void> {
    const embeddings = this.#index?.config.embeddings;
    if (!embeddings) return;
    const queries = [...new Set(searches.flatMap((s) => (s.op.query ? [s.op.query] : [])))];
    if (!queries.length) return;
    const vectors = await Promise.all(queries.map((query) => embeddings.embedQuery(query)));
    const byQuery = new Map(queries.map((query, i) => [query, vectors[i]]));
    for (const search of searches) {
      const vector = search.op.query ? byQuery.get(search.op.query) : undefined;
      if (vector) {
        search.queryVector = vector;
        // A ranked search scores every candidate: no early stop.
        search.need = undefined;
      }
    }
  }

  /** Extracts the texts of every put, embeds the distinct ones in one call, builds each item's vectors. */
  async #embedPuts(puts: PutOperation[]): Promise<PreparedPut[]> {
    const prepared: PreparedPut[] = puts.map((op) => ({ op }));
    const index = this.#index;
    if (!index || !puts.length) return prepared;
    const textsByPut = puts.map((op) =>
      op.value === null || op.index === false
        ? new Map<string, string>()
        : textsToEmbed(op.value, op.index == null ? index.paths : overridePaths(op.index)),
    );
    const distinct = [...new Set(textsByPut.flatMap((texts) => [...texts.values()]))];
    if (!distinct.length) return prepared;
    const embedded = await index.config.embeddings.embedDocuments(distinct);
    if (!Array.isArray(embedded) || embedded.length !== distinct.length) {
      throw new Error(
        `IndexedDBStore: the embeddings returned ${Array.isArray(embedded) ? embedded.length : "no"} vectors for ${distinct.length} texts.`,
      );
    }
    const dims = index.config.dims;
    const byText = new Map<string, number[]>();
    distinct.forEach((text, i) => {
      const vector = embedded[i]!;
      if (vector.length !== dims) {
        throw new Error(
          `IndexedDBStore: the embeddings returned a vector of ${vector.length} dimensions, but \`index.dims\` is ${dims}. Set \`index.dims\` to the model's vector size.`,
        );
      }
      byText.set(text, vector);
    });
    textsByPut.forEach((texts, i) => {
      if (!texts.size) return;
      const fields = [...texts.keys()];
      const vectors = new Float64Array(fields.length * dims);
      const norms = new Float64Array(fields.length);
      fields.forEach((field, j) => {
        const vector = byText.get(texts.get(field)!)!;
        vectors.set(vector, j * dims);
        // The norm of the numbers as given, so scores match InMemoryStore's.
        norms[j] = norm(vector);
      });
      prepared[i]!.vectors = { fields, dims, vectors, norms };
    });
    return prepared;
  }

  /** Opens the database once: checks its format, binds the serializer. */
  #prepare(): Promise<SerializerProtocol | undefined> {
    this.#ready ??= this.#open().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async #open(): Promise<SerializerProtocol | undefined> {
    const connection = await this.#db.connection();
    const missing = STORE_NAMES.filter((name) => !connection.objectStoreNames.contains(name));
    if (missing.length) {
      throw new Error(
        `IndexedDB database "${this.#db.name}" is not an IndexedDBStore database (it has no ${missing.join(", ")} object store); it may belong to an IndexedDBSaver or another library. Give the store its own dbName.`,
      );
    }
    const mode: FormatRecord["values"] = this.#serde ? "serde" : "native";
    await this.#db.write(
      ["meta"],
      async (tx) => {
        const meta = tx.objectStore("meta");
        const format = (await meta.get(META.format)) as FormatRecord | undefined;
        if (format === undefined) {
          const record: FormatRecord = { kind: "langgraph-store", version: STORE_FORMAT_VERSION, values: mode };
          await meta.put(record, META.format);
          return;
        }
        checkFormat(this.#db.name, format, mode);
      },
      "open the store",
    );
    if (!this.#serde) return undefined;
    return bindSerializer(
      this.#serde,
      () => this.#db.read(["meta"], (tx) => tx.objectStore("meta").get(META.serdeKey) as Promise<KeyRecord | undefined>, "read the store's key record"),
      (record) =>
        this.#db.write(
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
        await this.#db.write(["meta"], (tx) => tx.objectStore("meta").put(record, META.serdeKey), "store the store's key record");
      },
    );
  }
}

/** `InMemoryStore`'s namespace rule for items: non-empty, no dots, colons, NULs or empty labels; "langgraph" allowed. */
function validateItemNamespace(namespace: string[]): void {
  validateNamespace(namespace, { allowReservedRoot: true });
}

/** Rows per transaction when `rekey` re-encrypts a store. */
const REKEY_PAGE = 256;

/**
 * Gives `namespaces` (which must exist) a new write generation, as a write
 * to their items does, so that caches reread them.
 */
async function touchNamespaces(tx: Tx<StoreSchema, "readwrite">, namespaces: string[][]): Promise<void> {
  if (!namespaces.length) return;
  const distinct = [...new Map(namespaces.map((namespace) => [namespaceId(namespace), namespace])).values()];
  const meta = tx.objectStore("meta");
  const store = tx.objectStore("namespaces");
  const [clockRecord, rows] = await Promise.all([
    meta.get(META.clock) as Promise<ClockRecord | undefined>,
    Promise.all(distinct.map((namespace) => store.get(namespace))),
  ]);
  const clock: ClockRecord = { seq: clockRecord?.seq ?? 0, generation: (clockRecord?.generation ?? 0) + 1 };
  await Promise.all([
    meta.put(clock, META.clock),
    ...rows.flatMap((row) => (row ? [store.put({ ...row, generation: clock.generation })] : [])),
  ]);
}

/** The puts of a batch, one per item, at the position of its first put, with its last value (as upstream). */
function dedupePuts(operations: readonly Operation[]): PutOperation[] {
  const puts = new Map<string, PutOperation>();
  for (const op of operations) {
    if ("value" in op && "namespace" in op) puts.set(itemId(op.namespace, op.key), op);
  }
  return [...puts.values()];
}

/** Refuses a database of another kind, a newer format, or the other value encoding. */
function checkFormat(dbName: string, format: FormatRecord, mode: FormatRecord["values"]): void {
  if (format?.kind !== "langgraph-store") {
    throw new Error(
      `IndexedDB database "${dbName}" holds another library's data (no IndexedDBStore format record). Give the store its own dbName.`,
    );
  }
  if (format.version > STORE_FORMAT_VERSION) {
    throw new Error(
      `IndexedDB database "${dbName}" was written by a newer version of langgraph-checkpoint-indexeddb (store format ${format.version}, this one reads ${STORE_FORMAT_VERSION}). Upgrade the package.`,
    );
  }
  if (format.values !== mode) {
    throw new Error(
      format.values === "native"
        ? `IndexedDB database "${dbName}" was created without a serializer (values stored as structured clones), but this IndexedDBStore has a \`serde\`. Open it without \`serde\`, or copy its items into a new database (search and put) to serialize or encrypt them.`
        : `IndexedDB database "${dbName}" was created with a serializer (values stored as bytes, possibly encrypted), but this IndexedDBStore has no \`serde\`. Pass the same \`serde\` as when it was created.`,
    );
  }
}

/** Serializes every value and vector set of the batch (before the transaction). */
async function serializePuts(serde: SerializerProtocol, prepared: PreparedPut[]): Promise<void> {
  await Promise.all(
    prepared.map(async (put) => {
      const { namespace, key, value } = put.op;
      if (value === null) return;
      try {
        put.typedValue = await dumpForRow(serde, value, valueRow(namespace, key));
        if (put.vectors) {
          const { norms, vectors, dims } = put.vectors;
          put.typedVectors = await dumpForRow(serde, packVectors(norms, vectors, dims), vectorRow(namespace, key));
        }
      } catch (error) {
        if (error instanceof IndexedDBCheckpointError) throw error;
        throw new SerializationError(
          `Could not serialize the store item "${key}" in namespace [${namespace.join(", ")}]: ${(error as Error)?.message ?? String(error)}`,
          { cause: error },
        );
      }
    }),
  );
}

/** Issues the reads of one operation; only IndexedDB requests are awaited. */
async function readOne(tx: AnyTx, context: ReadContext, planned: Planned): Promise<ReadResult> {
  switch (planned.kind) {
    case "get":
      return tx.objectStore("items").get([planned.op.namespace, planned.op.key]);
    case "list": {
      const conditions = planned.op.matchConditions ?? [];
      // Narrow to a key range by the literal labels of a prefix condition.
      const prefix = conditions.find((c) => c.matchType === "prefix")?.path ?? [];
      const wildcard = prefix.indexOf("*");
      const head = wildcard === -1 ? prefix : prefix.slice(0, wildcard);
      return tx.objectStore("namespaces").getAllKeys(namespacePrefixRange(context.ranges, head));
    }
    case "search":
      return readSearch(tx, context, planned.plan);
    case "put":
      return null;
  }
}

/**
 * Writes the batch's puts and deletes. First one round of reads (existing
 * items, known namespaces, the clock), then every write, in batch order.
 */
async function writePuts(tx: Tx<StoreSchema, "readwrite">, puts: PreparedPut[]): Promise<void> {
  const items = tx.objectStore("items");
  const vectors = tx.objectStore("vectors");
  const namespaces = tx.objectStore("namespaces");
  const meta = tx.objectStore("meta");
  const touched = new Map<string, string[]>();
  for (const put of puts) touched.set(namespaceId(put.op.namespace), put.op.namespace);
  const [clockRecord, existing, namespaceRows] = await Promise.all([
    meta.get(META.clock) as Promise<ClockRecord | undefined>,
    Promise.all(puts.map((put) => items.get([put.op.namespace, put.op.key]))),
    Promise.all([...touched.values()].map((namespace) => namespaces.get(namespace))),
  ]);
  const clock: ClockRecord = {
    seq: clockRecord?.seq ?? 0,
    generation: (clockRecord?.generation ?? 0) + 1,
  };
  const known = new Map<string, NamespaceRow>();
  for (const row of namespaceRows) if (row) known.set(namespaceId(row.namespace), row);
  const now = new Date();
  // Awaited together at the end: a failed request must not be an unhandled rejection.
  const requests: Promise<unknown>[] = [];
  try {
    for (const [i, put] of puts.entries()) {
      const { namespace, key, value } = put.op;
      const id: [string[], string] = [namespace, key];
      const namespaceRow = known.get(namespaceId(namespace));
      if (!namespaceRow) {
        // Registered on first put or delete, as InMemoryStore's map entries are.
        const row: NamespaceRow = { namespace: [...namespace], seq: ++clock.seq, generation: clock.generation };
        known.set(namespaceId(namespace), row);
        requests.push(namespaces.put(row));
      } else if (namespaceRow.generation !== clock.generation) {
        namespaceRow.generation = clock.generation;
        requests.push(namespaces.put(namespaceRow));
      }
      const before = existing[i];
      if (value === null) {
        if (before) requests.push(items.delete(id));
        if (before?.indexed) requests.push(vectors.delete(id));
        continue;
      }
      const row: ItemRow = {
        namespace: [...namespace],
        key,
        seq: before?.seq ?? ++clock.seq,
        createdAt: before?.createdAt ?? now,
        updatedAt: now,
      };
      if (put.typedValue) row.typed = put.typedValue;
      else row.value = value;
      if (put.vectors) {
        row.indexed = true;
        const { fields, dims } = put.vectors;
        const vectorRowValue: VectorRow = { namespace: [...namespace], key, fields, dims };
        if (put.typedVectors) vectorRowValue.typed = put.typedVectors;
        else {
          vectorRowValue.vectors = put.vectors.vectors;
          vectorRowValue.norms = put.vectors.norms;
        }
        requests.push(vectors.put(vectorRowValue));
      } else if (before?.indexed) {
        // The new value has no vectors: never leave the old ones to score it.
        requests.push(vectors.delete(id));
      }
      try {
        requests.push(items.put(row));
      } catch (error) {
        throw cloneError(error, namespace, key);
      }
    }
  } catch (error) {
    // The transaction aborts: the requests already issued fail with it.
    for (const request of requests) request.catch(() => undefined);
    throw error;
  }
  requests.push(meta.put(clock, META.clock));
  await Promise.all(requests);
}

/** A value that structured clone refuses, explained. */
function cloneError(error: unknown, namespace: readonly string[], key: string): Error {
  const name = (error as { name?: string } | null)?.name;
  if (name !== "DataCloneError") return error as Error;
  return new SerializationError(
    `The value of store item "${key}" in namespace [${namespace.join(", ")}] cannot be stored as a structured clone (it holds a function, a symbol or a DOM object?). Store plain data, or give the IndexedDBStore a \`serde\`.`,
    { cause: error },
  );
}

/** Turns what an operation read into its result: decode, filter, order, rank, page. */
async function finish(
  planned: Planned,
  read: ReadResult,
  serde: SerializerProtocol | undefined,
  cache: NamespaceCache,
): Promise<Item | null | SearchItem[] | string[][]> {
  switch (planned.kind) {
    case "get":
      return read ? toItem(read as ItemRow, serde) : null;
    case "put":
      return null;
    case "list":
      return selectNamespaces(read as string[][], planned.op);
    case "search":
      return finishSearch(planned.plan, read as SearchRead, serde, cache);
  }
}
