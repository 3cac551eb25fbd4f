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
 * Layout and key ranges: `schema.ts`. Searches: `search.ts`, with the
 * query semantics (quirks included) in `query.ts` and the cache in
 * `cache.ts`. Row decoding: `codec.ts`.
 */
import {
  BaseStore,
  type IndexConfig,
  type Operation,
  type OperationResults,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import {
  checkKeyId,
  keyChanged,
  keyIdOf,
  withCurrentKey,
  type BoundSerializer,
  type KeyRecord,
} from "../serde/protocol.js";
import { changeDatabaseKey, rekeyDatabase, type ChangeKeyOptions } from "../serde/rekey.js";
import { Database, type Durability, type Tx } from "../idb/database.js";
import { DEFAULT_CACHE_ITEMS, NamespaceCache } from "./cache.js";
import { namespaceId } from "./codec.js";
import { STORE_UPGRADES, type StoreSchema } from "./schema.js";
import type { AnyTx, ReadContext } from "./search.js";
import { configPaths } from "./text.js";
import { type ReadResult, dedupePuts, finish, plan, readOne } from "./plan.js";
import { type PreparedIndex, embedPuts, embedQueries } from "./embed.js";
import { serializePuts, writePuts } from "./write.js";
import { STORE_NAMES, openStore } from "./format.js";
import { rewriteAll, storeKeyRecords } from "./rekey.js";
import { KeyChangeChannel, withKeyLock } from "../serde/key-change.js";

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

/**
 * LangGraph long-term memory (`BaseStore`) persisted in IndexedDB: items in
 * namespaces (`["user-1", "memories"]`) shared by every thread, with filters
 * and optional semantic search. Answers are those of `InMemoryStore`:
 * same validation and errors, same order (namespaces in order of first use,
 * items in order of creation), same filter operators, same scores. A
 * namespace stays listed once an item was put or deleted in it, even with
 * no item left, as in `InMemoryStore` (JS and Python); the PostgreSQL
 * stores list only namespaces that hold items.
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
 *   plain objects, and functions are refused (`SerializationError`);
 * - an embedding holding NaN or ±Infinity is refused before anything is
 *   written (the batch rejects with an `Error` naming the item and field, or
 *   the query), and a stored vector holding one (written by an older
 *   version, or edited on disk) gives no score: with no other vector its
 *   item is listed with the unranked ones (`score: undefined`). Upstream
 *   stores it and scores it 0, or NaN, which its sort leaves in store
 *   order, often ahead of the real matches.
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
  /** The factory given, for looking at a database the store cannot open. */
  readonly #indexedDB: IDBFactory | undefined;
  readonly #index: PreparedIndex | undefined;
  #serde: SerializerProtocol | undefined;
  readonly #cache: NamespaceCache;
  readonly #keyChannel: KeyChangeChannel;
  /** Another tab announced a key change since this store last bound. */
  #keyChanged = false;
  /** The open-time checks and the serializer bound to this database, cached. */
  #ready: Promise<BoundSerializer | undefined> | undefined;

  constructor(params: IndexedDBStoreParams = {}) {
    super();
    const { index, serde } = params;
    if (index) {
      const { embeddings } = index;
      if (
        !embeddings ||
        typeof embeddings.embedDocuments !== "function" ||
        typeof embeddings.embedQuery !== "function"
      ) {
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
    this.#indexedDB = params.indexedDB;
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
    this.#keyChannel = new KeyChangeChannel(this.#db.name);
    // Another tab upgrading or deleting the database, or the browser closing
    // it (site data cleared): what we knew may be gone, and a database made
    // again starts its write generations over, which the cache keys on.
    this.#db.onDropped(() => {
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
    const planned = plan(operations, this.#serde !== undefined, () => this.#db.ranges);
    const puts = dedupePuts(operations);
    const searches = planned.flatMap((p) => (p.kind === "search" ? [p.plan] : []));
    // Embeddings and serialization happen before the transaction opens.
    await embedQueries(this.#index, searches);
    const prepared = await embedPuts(this.#index, puts);

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
    const storeList = [...stores];
    const run = async (bound: BoundSerializer | undefined) => {
      if (bound) await serializePuts(bound.serde, prepared);
      // Values sealed under a key another tab retired roll the batch back.
      const checkKey = bound && ((record: KeyRecord | undefined) => checkKeyId(bound, keyIdOf(this.#serde, record)));
      const work = async (tx: AnyTx): Promise<ReadResult[]> => {
        // All reads first, so that they see the state before this batch.
        const reads = await Promise.all(planned.map((p) => readOne(tx, context, p)));
        if (prepared.length) await writePuts(tx as Tx<StoreSchema, "readwrite">, prepared, checkKey);
        return reads;
      };
      const reads = prepared.length
        ? await this.#db.write(storeList, work, "write to the store")
        : await this.#db.read(storeList, work, "read the store");
      return { reads, serde: bound?.serde };
    };
    const { reads, serde } =
      prepared.length && this.#serde
        ? await withCurrentKey(
            this.#db.name,
            () => this.#prepare() as Promise<BoundSerializer>,
            () => this.#stale(),
            run,
          )
        : await run(await this.#prepare());
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
    this.#keyChannel.close();
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
   * `EncryptedSerializer` with the new passphrase or key) takes over, and
   * the data key is rotated: every item and vector set is re-encrypted under
   * a fresh data key wrapped only under `next`'s key (as {@link rekey}
   * does), so neither the old passphrase nor any old copy of the key record
   * decrypts them afterwards, including items written later. If
   * interrupted, everything still reads with `next`, and calling it again
   * finishes the job. `{ rewrapOnly: true }` only re-wraps the data key
   * (instant; an old copy of the key record plus the old passphrase then
   * still decrypts every item, old and new). Other tabs must reopen with
   * the new passphrase: their puts fail with `KeyChangedError`.
   *
   * @example
   * await store.changeKey(await EncryptedSerializer.fromPassphrase(newPassphrase, { salt }));
   */
  async changeKey(next: SerializerProtocol, options: ChangeKeyOptions = {}): Promise<void> {
    const current = this.#requireSerde("changeKey");
    // One key change at a time across tabs: a second one waits for this one.
    await withKeyLock(this.#db.name, async () => {
      // The current key must open the record (checked by the re-wrap), unless an
      // interrupted change already handed it to `next`: then this resumes.
      const keyed = await changeDatabaseKey(current, next, this.#keyRecords());
      this.#serde = next;
      this.#ready = undefined;
      if (keyed && !options.rewrapOnly) await this.#rotate(next);
    });
  }

  /**
   * Re-encrypts every stored value and vector set under a fresh data key
   * (the passphrase is unchanged); with `allowPlaintext: true` it also
   * finishes a migration from plaintext. Safe to interrupt: everything stays
   * readable, and a second call finishes the job. One key change runs at a
   * time (a Web Lock); other tabs' stores re-encrypt their next writes under
   * the new key (docs/encryption.md, "Other tabs during a key change").
   */
  async rekey(): Promise<void> {
    const serde = this.#requireSerde("rekey");
    await withKeyLock(this.#db.name, () => this.#rotate(serde));
  }

  /** The key record's compare-and-swap; a swap drops the bound key here and, announced, in other tabs. */
  #keyRecords() {
    return storeKeyRecords(this.#db, () => {
      this.#ready = undefined;
      this.#keyChannel.announce();
    });
  }

  /** `rekey` with the key-change lock held. */
  async #rotate(serde: SerializerProtocol): Promise<void> {
    await this.#prepare();
    await rekeyDatabase(serde, this.#keyRecords(), async (rewrite) => {
      const items = await rewriteAll(this.#db, "items", rewrite);
      return items + (await rewriteAll(this.#db, "vectors", rewrite));
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

  /** Forgets the bound serializer: another tab changed the key. */
  #stale(): void {
    this.#keyChanged = true;
    this.#ready = undefined;
  }

  /** Opens the database once: checks its format, binds the serializer. */
  #prepare(): Promise<BoundSerializer | undefined> {
    this.#ready ??= openStore(this.#db, this.#serde, this.#indexedDB).then(
      (bound) => {
        // Another tab's key change drops the binding at once (the check in
        // every write transaction is what guarantees it).
        this.#keyChanged = false;
        if (bound?.keyId !== undefined) this.#keyChannel.listen(() => this.#stale());
        return bound;
      },
      async (error: unknown) => {
        this.#ready = undefined;
        throw this.#keyChanged ? await keyChanged(this.#db.name, error) : error;
      },
    );
    return this.#ready;
  }
}
