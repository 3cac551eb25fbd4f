/**
 * `IndexedDBSaver`: LangGraph's checkpoint saver on IndexedDB.
 *
 * Every method follows one order: validate ids, serialize (and encrypt) every
 * value, then run one transaction that only issues requests, then decode what
 * it read. No foreign `await` ever happens inside a transaction.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  DeltaSnapshot,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import {
  bindSerializer,
  changeDatabaseKey,
  isRowBound,
  rekeyDatabase,
  sameClone,
  type KeyRecord,
  type KeyRecordAccess,
  type ValueRewriter,
} from "./binding.js";
import type { IDBPObjectStore } from "idb";
import { addIfAbsent, issue, type Durability, type Tx } from "./db.js";
import { JournaledDatabase, type JournalOption, type RecoveryReport } from "./journal.js";
import { WriteBatcher } from "./batch.js";
import { ChangeFeed, type ChangeListener } from "./events.js";
import { SerializationError } from "./errors.js";
import { assertId, configIds, missingThreadIdMessage } from "./ids.js";
import { checkpointKey, checkpointRangeBounds, prefixBounds } from "./keys.js";
import { MsgpackSerializer } from "./msgpack.js";
import { latestRow, readDetails, threadRows, walkAncestors, type BlobReads } from "./reads.js";
import {
  assertVersionsMatch,
  decodeBlob,
  decodeCheckpoint,
  decodeMetadata,
  decodeWrite,
  decode,
  encode,
  rowRef,
  sortWrites,
  writeSortKey,
  type RawTuple,
} from "./rows.js";
import {
  SAVER_UPGRADES,
  TOMBSTONE_NS,
  isTombstoneWrite,
  tombstoneName,
  tombstoneWrite,
  tombstoneWriteKey,
  type BlobRow,
  type CheckpointRow,
  type SaverSchema,
  type SaverStoreName,
  type ThreadRow,
  type Tombstone,
  type Version,
  type WriteRow,
} from "./schema.js";
import { nextChannelVersion } from "./versions.js";
import { exportThread as exportPortable, type ExportThreadOptions } from "./portable.js";

/** Options of {@link IndexedDBSaver}. */
export interface IndexedDBSaverParams {
  /** IndexedDB database name. Default `"langgraph"`. */
  dbName?: string;
  /** Serializer for every stored value. Default {@link MsgpackSerializer}. */
  serde?: SerializerProtocol;
  /** The `IDBFactory` to use. Default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
  /** IndexedDB durability hint for write transactions. Default `"default"`. */
  durability?: Durability;
  /** How long an open blocked by another tab waits before `DatabaseBlockedError`. Default 10 s. */
  blockedTimeoutMs?: number;
  /**
   * A crash journal outside IndexedDB: `"opfs"` appends every committed write
   * to the Origin Private File System and restores a wiped or lagging
   * database from it before the first read (see docs/journal.md). Default `"off"`.
   */
  journal?: JournalOption;
  /** Told once, on open, what was recovered (or that the database was wiped). */
  onRecovery?: (report: RecoveryReport) => void;
  /** `"throw"`: operations reject with `DatabaseWipedError` when a wiped database could not be restored. Default `"report"`. */
  onWipe?: "report" | "throw";
}

/** Rows per read transaction when `list` pages through a namespace. */
const LIST_PAGE = 64;

/** How many checkpoint ids of late writes a tombstone remembers. */
const TOMBSTONE_DROPPED_LIMIT = 1000;

/** Rows per transaction when `rekey` re-encrypts a store. */
const REKEY_PAGE = 256;

/** Stores that a delete of a whole thread touches. */
const THREAD_STORES: SaverStoreName[] = ["checkpoints", "blobs", "writes", "threads", "meta"];

/** A read-write transaction over the saver's stores. */
type WriteTx = Tx<SaverSchema, "readwrite">;

/** A checkpoint's identity inside its thread. */
function rowId(row: CheckpointRow): string {
  return `${row.checkpoint_ns}\u0000${row.checkpoint_id}`;
}

/** A blob's identity inside its thread. */
function blobId(checkpointNs: string, channel: string, version: Version): string {
  return `${checkpointNs}\u0000${channel}\u0000${typeof version}:${String(version)}`;
}

/** The checkpoint `listThreads` shows a thread by: the newest root one, else the newest. */
function latestOf(rows: CheckpointRow[]): CheckpointRow | undefined {
  let best: CheckpointRow | undefined;
  for (const row of rows) {
    const rootFirst = (row.checkpoint_ns === "" ? 1 : 0) - (best?.checkpoint_ns === "" ? 1 : 0);
    if (!best || rootFirst > 0 || (rootFirst === 0 && row.checkpoint_id > best.checkpoint_id)) best = row;
  }
  return best;
}

/**
 * A channel that can rebuild a delta channel's value from its history:
 * LangGraph's `DeltaChannel` (pass `graph.channels`).
 */
export interface DeltaChannelLike {
  fromCheckpoint(checkpoint: unknown): { replayWrites(writes: CheckpointPendingWrite[]): void; get(): unknown };
}

/** True for a channel object that can replay delta writes. */
function isDeltaChannelLike(channel: unknown): channel is DeltaChannelLike {
  const candidate = channel as Partial<DeltaChannelLike> & { replayWrites?: unknown } | null;
  return typeof candidate?.fromCheckpoint === "function" && typeof candidate.replayWrites === "function";
}

/** Options of {@link IndexedDBSaver.prune}. */
export interface PruneOptions {
  /** `"keep_latest"` (default) or `"delete"`. */
  strategy?: "keep_latest" | "delete";
  /** How many newest checkpoints per namespace `"keep_latest"` keeps. Default 1. */
  keepLast?: number;
  /**
   * The graph's channels (`graph.channels`), to snapshot delta channels
   * instead of keeping their history. Channels that are not delta channels
   * are ignored.
   */
  channels?: Record<string, unknown>;
}

/** Options of {@link IndexedDBSaver.listThreads}. */
export interface ListThreadsOptions {
  limit?: number;
  offset?: number;
  /** Only threads updated strictly before this time (ms since the epoch). */
  before?: number;
  /** Strict equality on the metadata of each thread's latest checkpoint. */
  filter?: Record<string, unknown>;
}

/** One thread, as {@link IndexedDBSaver.listThreads} lists it. */
export interface ThreadInfo {
  threadId: string;
  /** When its first checkpoint was put (ms since the epoch). */
  createdAt: number;
  /** When a checkpoint was last put, copied or removed (ms since the epoch). */
  updatedAt: number;
  /** Checkpoints in all namespaces. */
  checkpointCount: number;
  /** The newest root checkpoint's id. */
  latestCheckpointId?: string;
  /** That checkpoint's metadata. */
  metadata?: CheckpointMetadata;
}

/** True when a deleted thread must ignore writes aimed at `checkpointId`. */
function isDeadCheckpoint(tombstone: Tombstone | undefined, checkpointId: string, exists: boolean): boolean {
  if (!tombstone || exists) return false;
  return checkpointId <= tombstone.max_deleted_id || tombstone.dropped.includes(checkpointId);
}

/**
 * Thrown inside a write transaction to abort it: the write belongs to a run
 * still in flight on a thread deleted meanwhile.
 */
class LateWrite extends Error {
  constructor(readonly tombstone: Tombstone) {
    super("late write to a deleted thread");
  }
}

/**
 * A stored tombstone, checked: one altered outside the saver gives a
 * SerializationError naming the thread, not a TypeError from deep inside.
 */
function asTombstone(value: unknown, threadId: string): Tombstone | undefined {
  if (value === undefined) return undefined;
  const tombstone = value as Partial<Tombstone> | null;
  if (typeof tombstone?.max_deleted_id !== "string" || !Array.isArray(tombstone.dropped)) {
    throw new SerializationError(
      `The tombstone of deleted thread "${threadId}" is malformed: it was altered outside the saver. clearTombstone("${threadId}") removes it.`,
    );
  }
  return tombstone as Tombstone;
}

/** Reads a thread's tombstone in `tx` (undefined when the thread was never deleted). */
async function readTombstone(tx: Tx<SaverSchema, "readwrite">, threadId: string): Promise<Tombstone | undefined> {
  return asTombstone((await tx.objectStore("meta").get(tombstoneName(threadId)))?.value, threadId);
}

/**
 * What replication (src/sync/local.ts) needs of a saver beyond its public
 * API: its database (raw rows, so ciphertext travels as stored), its write
 * queue, its change feed and its serializer binding. Not public API
 * (obtained only through the internal `_rawAccess()`).
 */
export interface SaverRawAccess {
  /** The saver's database (reads). */
  readonly db: JournaledDatabase;
  /** Writes through the saver's queue, in order with its own writes. */
  write<R>(stores: SaverStoreName[], work: (tx: WriteTx) => Promise<R>, action: string): Promise<R>;
  /** Tells this tab's listeners and other tabs about a committed change. */
  emit(change: { threadId: string; checkpointNs?: string; checkpointId?: string; kind: "put" | "delete" }): void;
  /** A timestamp in ms that strictly increases within the saver. */
  now(): number;
}

/**
 * A LangGraph.js checkpoint saver that persists in the browser's IndexedDB.
 *
 * Checkpoints are keyed `[thread_id, checkpoint_ns, checkpoint_id]`, channel
 * values are stored once per version, and pending writes are indexed by
 * channel for a fast delta-channel history walk.
 *
 * @example
 * ```ts
 * import { StateGraph, MessagesAnnotation } from "@langchain/langgraph/web";
 * import { IndexedDBSaver } from "langgraph-checkpoint-indexeddb";
 *
 * const checkpointer = new IndexedDBSaver({ dbName: "my-app" });
 * const graph = new StateGraph(MessagesAnnotation)
 *   .addNode("agent", callModel)
 *   .addEdge("__start__", "agent")
 *   .compile({ checkpointer });
 * await graph.invoke({ messages: [new HumanMessage("hi")] }, { configurable: { thread_id: "t1" } });
 * ```
 */
export class IndexedDBSaver extends BaseCheckpointSaver<number> {
  readonly #db: JournaledDatabase;
  readonly #feed: ChangeFeed;
  /** Group commit of writes (see batch.ts). */
  readonly #writes: WriteBatcher<SaverSchema>;
  /** Last timestamp handed out, so `updatedAt` strictly increases within this instance. */
  #lastTime = 0;
  /** The serializer bound to this database (keyed serializers read `meta` first). */
  #bound: Promise<SerializerProtocol> | undefined;

  constructor(params: IndexedDBSaverParams = {}) {
    super(params.serde ?? new MsgpackSerializer());
    this.#db = new JournaledDatabase({
      name: params.dbName ?? "langgraph",
      upgrades: SAVER_UPGRADES,
      indexedDB: params.indexedDB,
      durability: params.durability,
      blockedTimeoutMs: params.blockedTimeoutMs,
      journal: params.journal,
      onRecovery: params.onRecovery,
      onWipe: params.onWipe,
    });
    this.#feed = new ChangeFeed(this.#db.name);
    this.#writes = new WriteBatcher(this.#db);
  }

  /** The IndexedDB database name. */
  get dbName(): string {
    return this.#db.name;
  }

  /**
   * Raw access for replication (`SyncClient`): see {@link SaverRawAccess}.
   * @internal
   */
  _rawAccess(): SaverRawAccess {
    return {
      db: this.#db,
      write: (stores, work, action) => this.#writes.write(stores, work, action, false),
      emit: (change) => this.#feed.emit(change),
      now: () => this.#now(),
    };
  }

  /**
   * Opens the database (restoring it from the journal if it lost writes) and
   * tells what was found: `"restored"`, `"wiped"` (emptied, nothing to
   * restore from), `"ok"`, or `"journal-unavailable"`.
   */
  recovery(): Promise<RecoveryReport> {
    return this.#db.recovery();
  }

  /** Rewrites the journal as one snapshot of the database (it also compacts itself as it grows). */
  compactJournal(): Promise<void> {
    return this.#db.compact();
  }

  /** The serializer for this database, resolved once (a wrong passphrase fails here). */
  #serde(): Promise<SerializerProtocol> {
    this.#bound ??= bindSerializer(
      this.serde,
      () => this.#db.read(["meta"], async (tx) => (await tx.objectStore("meta").get("key"))?.value as KeyRecord | undefined, "read the key record"),
      (record) =>
        this.#db.write(
          ["meta"],
          async (tx) => {
            const meta = tx.objectStore("meta");
            if (await meta.getKey("key")) return false;
            await meta.put({ name: "key", value: record });
            return true;
          },
          "store the key record",
        ),
      (record) => this.#db.write(["meta"], async (tx) => void (await tx.objectStore("meta").put({ name: "key", value: record })), "store the key record"),
    ).catch((error: unknown) => {
      this.#bound = undefined;
      throw error;
    });
    return this.#bound;
  }

  /**
   * Opens the database and checks the serializer against it now, instead of
   * on first use: with an EncryptedSerializer, a wrong passphrase or key
   * rejects here with `DecryptionError` ("Wrong passphrase or key"), before
   * any row is read. For unlock screens.
   */
  async unlock(): Promise<void> {
    await this.#serde();
  }

  /**
   * Changes the passphrase or key of an encrypted database: `next` (an
   * EncryptedSerializer with the new passphrase or key) takes over. Only the
   * data key is re-wrapped, no row is re-encrypted, so it takes the same
   * time whatever the database's size; afterwards the old passphrase no
   * longer opens it, and this saver uses `next`. Other tabs must reopen with
   * the new passphrase.
   *
   * @example
   * await saver.changeKey(await EncryptedSerializer.fromPassphrase(newPassphrase, { salt }));
   */
  async changeKey(next: SerializerProtocol): Promise<void> {
    await this.#serde(); // the current key must open the database first
    await changeDatabaseKey(this.serde, next, this.#keyRecords());
    this.serde = next;
    this.#bound = undefined;
  }

  /**
   * Re-encrypts every stored value under a fresh random data key (the key
   * rows are sealed with; the passphrase is unchanged). With
   * `allowPlaintext: true`, it also encrypts values stored before encryption
   * was turned on, finishing a migration. Safe to interrupt: every value
   * stays readable, and a second call finishes the job. Run it with the app
   * open in one tab only.
   */
  async rekey(): Promise<void> {
    await this.#serde();
    await rekeyDatabase(this.serde, this.#keyRecords(), async (rewrite) => {
      let changed = 0;
      changed += await this.#rewriteStore("checkpoints", rewrite);
      changed += await this.#rewriteStore("blobs", rewrite);
      changed += await this.#rewriteStore("writes", rewrite);
      changed += await this.#rewriteStore("threads", rewrite);
      return changed;
    });
  }

  /** Compare-and-swap access to the key record; a swap drops the bound serializer. */
  #keyRecords(): KeyRecordAccess {
    return {
      read: () =>
        this.#db.read(["meta"], async (tx) => (await tx.objectStore("meta").get("key"))?.value as KeyRecord | undefined, "read the key record"),
      replace: async (expected, next) => {
        const swapped = await this.#db.write(
          ["meta"],
          async (tx) => {
            const meta = tx.objectStore("meta");
            if (!sameClone((await meta.get("key"))?.value, expected)) return false;
            await meta.put({ name: "key", value: next });
            return true;
          },
          "store the key record",
        );
        if (swapped) this.#bound = undefined;
        return swapped;
      },
    };
  }

  /**
   * One pass of `rewrite` over a store, a page at a time: read a page, re-encode
   * outside any transaction, then put back each row that has not changed
   * meanwhile. Returns how many rows needed re-encoding (written or skipped
   * because they changed: the next pass looks at those again).
   */
  async #rewriteStore<S extends "checkpoints" | "blobs" | "writes" | "threads">(store: S, rewrite: ValueRewriter): Promise<number> {
    const keys = await this.#db.read([store], (tx) => tx.objectStore(store).getAllKeys(), "list rows to re-encrypt");
    let changed = 0;
    for (let start = 0; start < keys.length; start += REKEY_PAGE) {
      const page = keys.slice(start, start + REKEY_PAGE);
      const rows = await this.#db.read([store], (tx) => Promise.all(page.map((key) => tx.objectStore(store).get(key))), "read rows to re-encrypt");
      const updates: { key: (typeof keys)[number]; before: unknown; after: unknown }[] = [];
      for (const [i, row] of rows.entries()) {
        if (row === undefined) continue;
        const after = await rewriteRow(store, row as SaverSchema[S]["value"], rewrite);
        if (after !== undefined) updates.push({ key: page[i]!, before: row, after });
      }
      if (updates.length === 0) continue;
      changed += updates.length;
      await this.#db.write(
        [store],
        async (tx) => {
          const objects = tx.objectStore(store);
          const current = await Promise.all(updates.map(({ key }) => objects.get(key)));
          await Promise.all(
            updates.map(({ before, after }, i) => (sameClone(current[i], before) ? objects.put(after as SaverSchema[S]["value"]) : undefined)),
          );
        },
        "store re-encrypted rows",
      );
    }
    return changed;
  }

  /**
   * Channel versions unique across forks: the integer part counts, a random
   * fraction tells branches apart (see versions.ts).
   */
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current as number | string | undefined);
  }

  // ---------------------------------------------------------------- reads

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    // As every LangGraph saver: no thread, no checkpoint (not an error).
    if (config.configurable?.thread_id === undefined) return undefined;
    const { threadId, checkpointNs, checkpointId } = configIds(config, "get checkpoint");
    // Bind first: a wrong passphrase fails before any row is read.
    const serde = await this.#serde();
    const raw = await this.#db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const row = checkpointId
          ? await tx.objectStore("checkpoints").get(checkpointKey(threadId, checkpointNs, checkpointId) as [string, string, string])
          : await latestRow(tx, this.#db.ranges, threadId, checkpointNs);
        return row ? readDetails(tx, this.#db.ranges, row) : undefined;
      },
      "get checkpoint",
    );
    if (!raw) return undefined;
    return this.#decodeTuple(serde, raw);
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let remaining = options.limit;
    if (remaining !== undefined && remaining <= 0) return;
    const configurable = config.configurable ?? {};
    const threadId: unknown = configurable.thread_id || undefined;
    if (threadId !== undefined) assertId("thread_id", threadId);
    const checkpointNs: unknown = configurable.checkpoint_ns;
    if (checkpointNs !== undefined) assertId("checkpoint_ns", checkpointNs, { allowEmpty: true });
    const onlyId: unknown = configurable.checkpoint_id || undefined;
    if (onlyId !== undefined) assertId("checkpoint_id", onlyId);
    const beforeId: unknown = before?.configurable?.checkpoint_id || undefined;
    if (beforeId !== undefined) assertId("before.checkpoint_id", beforeId);
    const filterEntries = Object.entries(filter ?? {});
    const serde = await this.#serde();

    const pages =
      typeof threadId === "string" && typeof checkpointNs === "string"
        ? this.#namespacePages(
            threadId,
            checkpointNs,
            beforeId,
            onlyId,
            filterEntries.length === 0,
            // Without a filter the limit is known: read no more rows than it.
            filterEntries.length === 0 && remaining !== undefined ? Math.min(remaining, LIST_PAGE) : LIST_PAGE,
          )
        : this.#scatteredPages(threadId as string | undefined, checkpointNs as string | undefined, beforeId, onlyId, filterEntries.length === 0);

    for await (const page of pages) {
      // Metadata decides the filter; details are read only for rows that pass.
      const matched: CheckpointRow[] = [];
      const metadataById = new Map<CheckpointRow, CheckpointMetadata>();
      for (const raw of page) {
        if (filterEntries.length === 0) {
          matched.push(raw.row);
          continue;
        }
        const metadata = await decodeMetadata(serde, raw.row);
        if (filterEntries.every(([key, value]) => (metadata as Record<string, unknown>)[key] === value)) {
          matched.push(raw.row);
          metadataById.set(raw.row, metadata);
        }
      }
      if (matched.length === 0) continue;
      const chosen = remaining === undefined ? matched : matched.slice(0, remaining);
      const details =
        filterEntries.length === 0
          ? page.slice(0, chosen.length)
          : await this.#db.read(
              ["blobs", "writes"],
              (tx) => {
                const blobReads: BlobReads = new Map();
                return Promise.all(chosen.map((row) => readDetails(tx, this.#db.ranges, row, blobReads)));
              },
              "list checkpoints",
            );
      for (const raw of details) {
        yield await this.#decodeTuple(serde, raw, metadataById.get(raw.row));
        if (remaining !== undefined && --remaining <= 0) return;
      }
    }
  }

  /**
   * Pages of one namespace, newest first, by a reverse cursor: the cost is
   * the page, not the thread's length. With `withDetails`, blobs and writes
   * come in the same transaction.
   */
  async *#namespacePages(
    threadId: string,
    checkpointNs: string,
    beforeId: string | undefined,
    onlyId: string | undefined,
    withDetails: boolean,
    pageSize: number,
  ): AsyncGenerator<RawTuple[]> {
    if (onlyId !== undefined) {
      if (beforeId !== undefined && !(onlyId < beforeId)) return;
      const single = await this.#db.read(
        ["checkpoints", "blobs", "writes"],
        async (tx) => {
          const row = await tx.objectStore("checkpoints").get([threadId, checkpointNs, onlyId]);
          return row ? [await readDetails(tx, this.#db.ranges, row)] : [];
        },
        "list checkpoints",
      );
      if (single.length > 0) yield single;
      return;
    }
    let upperId = beforeId;
    for (;;) {
      const page = await this.#db.read(
        ["checkpoints", "blobs", "writes"],
        async (tx) => {
          const bounds = checkpointRangeBounds(threadId, checkpointNs, upperId);
          const range = this.#db.ranges.bound(bounds.lower, bounds.upper, false, bounds.upperOpen);
          const rows: CheckpointRow[] = [];
          let cursor = await tx.objectStore("checkpoints").openCursor(range, "prev");
          while (cursor && rows.length < pageSize) {
            rows.push(cursor.value);
            if (rows.length < pageSize) cursor = await cursor.continue();
          }
          if (!withDetails) return rows.map((row): RawTuple => ({ row, blobs: [], writes: [] }));
          const blobReads: BlobReads = new Map();
          return Promise.all(rows.map((row) => readDetails(tx, this.#db.ranges, row, blobReads)));
        },
        "list checkpoints",
      );
      if (page.length === 0) return;
      yield page;
      if (page.length < pageSize) return;
      upperId = page[page.length - 1]!.row.checkpoint_id;
    }
  }

  /**
   * Pages across namespaces or threads: keys first (cheap), ordered newest
   * checkpoint id first as every other saver lists them, then rows by page.
   */
  async *#scatteredPages(
    threadId: string | undefined,
    checkpointNs: string | undefined,
    beforeId: string | undefined,
    onlyId: string | undefined,
    withDetails: boolean,
  ): AsyncGenerator<RawTuple[]> {
    const keys = await this.#db.read(
      ["checkpoints"],
      (tx) => {
        const store = tx.objectStore("checkpoints");
        if (threadId === undefined) return store.getAllKeys();
        const bounds = prefixBounds(threadId);
        return store.getAllKeys(this.#db.ranges.bound(bounds.lower, bounds.upper));
      },
      "list checkpoints",
    );
    const wanted = keys.filter(
      ([, ns, id]) =>
        (checkpointNs === undefined || ns === checkpointNs) &&
        (onlyId === undefined || id === onlyId) &&
        (beforeId === undefined || id < beforeId),
    );
    wanted.sort((a, b) => (a[2] !== b[2] ? (a[2] < b[2] ? 1 : -1) : a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    for (let start = 0; start < wanted.length; start += LIST_PAGE) {
      const slice = wanted.slice(start, start + LIST_PAGE);
      const page = await this.#db.read(
        ["checkpoints", "blobs", "writes"],
        async (tx) => {
          const rows = await Promise.all(slice.map((key) => tx.objectStore("checkpoints").get(key)));
          const present = rows.filter((row): row is CheckpointRow => row !== undefined);
          if (!withDetails) return present.map((row): RawTuple => ({ row, blobs: [], writes: [] }));
          const blobReads: BlobReads = new Map();
          return Promise.all(present.map((row) => readDetails(tx, this.#db.ranges, row, blobReads)));
        },
        "list checkpoints",
      );
      if (page.length > 0) yield page;
    }
  }

  // ---------------------------------------------------------------- writes

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (config.configurable === undefined) {
      throw new Error(`Failed to put checkpoint. The passed RunnableConfig is missing a required "configurable" property.`);
    }
    const { threadId, checkpointNs, checkpointId: parentId } = configIds(config, "put checkpoint");
    assertId("checkpoint.id", checkpoint.id);
    const checkpointId = checkpoint.id;
    // Copy synchronously: the caller may reuse these objects once we await.
    const { channel_values: values, ...withoutValues } = {
      ...checkpoint,
      ...copyCheckpoint(checkpoint),
    };
    const versions = { ...newVersions };
    const storedMetadata: Record<string, unknown> = { ...metadata };
    const configRunId: unknown = config.metadata?.run_id;
    if (storedMetadata.run_id === undefined && configRunId !== undefined) storedMetadata.run_id = configRunId;
    const serde = await this.#serde();

    // Serialize everything before the transaction opens.
    const [checkpointBytes, metadataBytes, blobs] = await Promise.all([
      encode(serde, "serialize the checkpoint", withoutValues, rowRef.checkpoint(threadId, checkpointNs, checkpointId)),
      encode(serde, "serialize the checkpoint metadata", storedMetadata, rowRef.metadata(threadId, checkpointNs, checkpointId)),
      Promise.all(
        Object.entries(versions)
          .filter(([channel]) => Object.prototype.hasOwnProperty.call(values, channel))
          .map(async ([channel, version]): Promise<BlobRow> => {
            assertId("channel", channel);
            return {
              thread_id: threadId,
              checkpoint_ns: checkpointNs,
              channel,
              version,
              value: await encode(
                serde,
                `serialize channel "${channel}"`,
                values[channel],
                rowRef.blob(threadId, checkpointNs, channel, version),
              ),
            };
          }),
      ),
    ]);

    const row: CheckpointRow = {
      thread_id: threadId,
      checkpoint_ns: checkpointNs,
      checkpoint_id: checkpointId,
      checkpoint: checkpointBytes,
      metadata: metadataBytes,
      channel_versions: { ...checkpoint.channel_versions },
      created_at: 0,
    };
    if (parentId !== undefined) row.parent_checkpoint_id = parentId;
    if (typeof storedMetadata.run_id === "string") row.run_id = storedMetadata.run_id;

    const now = this.#now();
    row.created_at = now;
    let stored = true;
    try {
      await this.#writes.write(
        ["checkpoints", "blobs", "threads", "meta"],
        async (tx) => {
          // Every request goes out in this tick, the tombstone read first: in
          // the common case (no tombstone) the put costs one round trip.
          const tombstoneRead = readTombstone(tx, threadId);
          const blobStore = tx.objectStore("blobs");
          for (const blob of blobs) issue(blobStore.put(blob));
          const checkpoints = tx.objectStore("checkpoints");
          issue(checkpoints.put(row));
          if (checkpointNs === "") {
            issue(tx.objectStore("threads").put({
              thread_id: threadId,
              updated_at: now,
              latest: { checkpoint_ns: checkpointNs, checkpoint_id: checkpointId, metadata: metadataBytes },
            }));
          }
          const tombstone = await tombstoneRead;
          if (tombstone && parentId !== undefined) {
            const parentExists = (await checkpoints.getKey([threadId, checkpointNs, parentId])) !== undefined;
            if (isDeadCheckpoint(tombstone, parentId, parentExists)) throw new LateWrite(tombstone);
          }
        },
        "put checkpoint",
      );
    } catch (error) {
      if (!(error instanceof LateWrite)) throw error;
      // A run still in flight on a deleted thread: its checkpoint was rolled
      // back; remember the id so its writes and children are dropped too.
      stored = false;
      await this.#writes.write(
        ["meta", "writes"],
        async (tx) => {
          const current = (await readTombstone(tx, threadId)) ?? error.tombstone;
          const next: Tombstone = { ...current, dropped: [...current.dropped, checkpointId].slice(-TOMBSTONE_DROPPED_LIMIT) };
          // Its writes may have come first (putWrites before put): drop them too.
          const bounds = prefixBounds(threadId, checkpointNs, checkpointId);
          issue(tx.objectStore("writes").delete(this.#db.ranges.bound(bounds.lower, bounds.upper)));
          issue(tx.objectStore("writes").put(tombstoneWrite(threadId, next)));
          await tx.objectStore("meta").put({ name: tombstoneName(threadId), value: next });
        },
        "record a late write",
        false,
      );
    }
    if (stored) this.#feed.emit({ threadId, checkpointNs, checkpointId, kind: "put" });
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const configurable = config.configurable ?? {};
    if (configurable.thread_id === undefined) throw new Error(missingThreadIdMessage("put writes"));
    if (configurable.checkpoint_id === undefined) {
      throw new Error(`Failed to put writes. The passed RunnableConfig is missing a required "checkpoint_id" field in its "configurable" property.`);
    }
    const { threadId, checkpointNs, checkpointId } = configIds(config, "put writes");
    if (checkpointId === undefined) throw new Error(`Failed to put writes: "checkpoint_id" is empty.`);
    assertId("task_id", taskId);
    if (typeof taskPath !== "string") throw new Error(`Invalid task path: expected a string, got ${typeof taskPath}.`);
    const serde = await this.#serde();

    const rows = await Promise.all(
      writes.map(async ([channel, value], position): Promise<WriteRow> => {
        assertId("channel", channel);
        const idx = WRITES_IDX_MAP[channel] ?? position;
        return {
          thread_id: threadId,
          checkpoint_ns: checkpointNs,
          checkpoint_id: checkpointId,
          task_id: taskId,
          idx,
          channel,
          task_path: taskPath,
          value: await encode(
            serde,
            `serialize a write to "${channel}"`,
            value,
            rowRef.write(threadId, checkpointNs, checkpointId, taskId, idx),
          ),
        };
      }),
    );
    if (rows.length === 0) return;

    try {
      // Fast path: the writes store alone, so this never waits for a put.
      await this.#writes.write(
        ["writes"],
        async (tx) => {
          const store = tx.objectStore("writes");
          const tombstoneRead = store.get(tombstoneWriteKey(threadId));
          const stored = this.#storeWrites(store, rows);
          issue(stored); // awaited below, unless the tombstone aborts first
          const tombstone = asTombstone((await tombstoneRead)?.tombstone, threadId);
          // A deleted thread: roll back and take the careful path.
          if (tombstone) throw new LateWrite(tombstone);
          await stored;
        },
        "put writes",
      );
    } catch (error) {
      if (!(error instanceof LateWrite)) throw error;
      await this.#writes.write(
        ["writes", "checkpoints"],
        async (tx) => {
          const store = tx.objectStore("writes");
          const tombstone = asTombstone((await store.get(tombstoneWriteKey(threadId)))?.tombstone, threadId);
          const exists = (await tx.objectStore("checkpoints").getKey([threadId, checkpointNs, checkpointId])) !== undefined;
          // Writes of a run still in flight on a deleted thread are dropped.
          if (isDeadCheckpoint(tombstone, checkpointId, exists)) return;
          await this.#storeWrites(store, rows);
        },
        "put writes",
        false,
      );
    }
  }

  /**
   * Issues the requests that store `rows`, decided per write, not per batch:
   * special channels (negative idx) replace, regular writes keep the first
   * value stored under (task_id, idx).
   */
  #storeWrites(store: IDBPObjectStore<SaverSchema, SaverStoreName[], "writes", "readwrite">, rows: WriteRow[]): Promise<unknown> {
    return Promise.all(rows.map((write) => (write.idx < 0 ? store.put(write) : addIfAbsent(store, write))));
  }

  override async deleteThread(threadId: string): Promise<void> {
    assertId("thread_id", threadId);
    const deleted = await this.#writes.write(
      THREAD_STORES,
      async (tx) => {
        const bounds = prefixBounds(threadId);
        const range = this.#db.ranges.bound(bounds.lower, bounds.upper);
        const [previous, checkpointKeys, allWriteKeys] = await Promise.all([
          readTombstone(tx, threadId),
          tx.objectStore("checkpoints").getAllKeys(range),
          tx.objectStore("writes").getAllKeys(range),
        ]);
        const writeKeys = allWriteKeys.filter((key) => key[1] !== TOMBSTONE_NS);
        if (checkpointKeys.length === 0 && writeKeys.length === 0) return false;
        let maxId = previous?.max_deleted_id ?? "";
        for (const key of checkpointKeys) if (key[2] > maxId) maxId = key[2];
        for (const key of writeKeys) if (key[2] > maxId) maxId = key[2];
        issue(tx.objectStore("checkpoints").delete(range));
        issue(tx.objectStore("blobs").delete(range));
        issue(tx.objectStore("writes").delete(range));
        issue(tx.objectStore("threads").delete(threadId));
        const tombstone: Tombstone = { max_deleted_id: maxId, dropped: previous?.dropped ?? [], deleted_at: Date.now() };
        issue(tx.objectStore("writes").put(tombstoneWrite(threadId, tombstone)));
        await tx.objectStore("meta").put({ name: tombstoneName(threadId), value: tombstone });
        return true;
      },
      "delete thread",
      false,
    );
    if (deleted) this.#feed.emit({ threadId, kind: "delete" });
  }
  // ---------------------------------------------------------------- thread lifecycle

  /**
   * The thread as a versioned, self-describing file (every namespace,
   * checkpoint, channel value and pending write), for `importThread` into
   * this or any other `BaseCheckpointSaver`. See docs/export-format.md.
   */
  exportThread(threadId: string, options: ExportThreadOptions & { as: "bytes" }): Promise<Uint8Array>;
  exportThread(threadId: string, options?: ExportThreadOptions & { as?: "blob" }): Promise<Blob>;
  exportThread(threadId: string, options: ExportThreadOptions & { as?: "blob" | "bytes" } = {}): Promise<Blob | Uint8Array> {
    return options.as === "bytes"
      ? exportPortable(this, threadId, { ...options, as: "bytes" })
      : exportPortable(this, threadId, { ...options, as: "blob" });
  }

  /**
   * Forgets that `threadId` was deleted: writes whose parents predate the
   * delete are accepted again. `importThread` calls it to restore a thread
   * (a pruned thread's oldest checkpoint points to a parent that is gone).
   * Only call it when no run of the deleted thread is still going.
   */
  async clearTombstone(threadId: string): Promise<void> {
    assertId("thread_id", threadId);
    await this.#writes.write(
      ["meta", "writes"],
      (tx) => {
        issue(tx.objectStore("meta").delete(tombstoneName(threadId)));
        issue(tx.objectStore("writes").delete(tombstoneWriteKey(threadId)));
      },
      "clear a tombstone",
      false,
    );
  }

  /**
   * Copies a whole thread (every namespace, checkpoint, channel value and
   * pending write) to `targetThreadId`, keeping checkpoint ids, parent links
   * and metadata. The source is untouched; an unknown source copies nothing.
   * The target must not have checkpoints yet. Values bound to their row (an
   * encrypting serializer) are re-encrypted for the target's rows first; the
   * copy itself is one transaction.
   */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    assertId("sourceThreadId", sourceThreadId);
    assertId("targetThreadId", targetThreadId);
    if (sourceThreadId === targetThreadId) throw new Error("copyThread: the source and target thread ids are the same.");
    const ranges = this.#db.ranges;
    const source = await this.#db.read(
      ["checkpoints", "blobs", "writes", "threads"],
      async (tx) => {
        const [checkpoints, blobs, writes, thread] = await Promise.all([
          threadRows(tx, ranges, "checkpoints", sourceThreadId),
          threadRows(tx, ranges, "blobs", sourceThreadId),
          threadRows(tx, ranges, "writes", sourceThreadId).then((rows) => rows.filter((row) => !isTombstoneWrite(row))),
          tx.objectStore("threads").get(sourceThreadId),
        ]);
        return { checkpoints, blobs, writes, thread };
      },
      "read the thread to copy",
    );
    if (source.checkpoints.length === 0 && source.writes.length === 0) return;
    const serde = await this.#serde();
    const t = targetThreadId;
    // Re-bind each value to its new row when the serializer binds rows;
    // otherwise the bytes are valid anywhere and are copied as they are.
    const rebind = isRowBound(serde);
    const moved = {
      checkpoints: await Promise.all(
        source.checkpoints.map(async (row): Promise<CheckpointRow> => {
          if (!rebind) return { ...row, thread_id: t };
          const [checkpoint, metadata] = await Promise.all([decodeCheckpoint(serde, row), decodeMetadata(serde, row)]);
          return {
            ...row,
            thread_id: t,
            checkpoint: await encode(serde, "re-encrypt a checkpoint", checkpoint, rowRef.checkpoint(t, row.checkpoint_ns, row.checkpoint_id)),
            metadata: await encode(serde, "re-encrypt metadata", metadata, rowRef.metadata(t, row.checkpoint_ns, row.checkpoint_id)),
          };
        }),
      ),
      blobs: await Promise.all(
        source.blobs.map(async (blob): Promise<BlobRow> => {
          if (!rebind) return { ...blob, thread_id: t };
          const value = await decodeBlob(serde, blob);
          return {
            ...blob,
            thread_id: t,
            value: await encode(serde, "re-encrypt a channel value", value, rowRef.blob(t, blob.checkpoint_ns, blob.channel, blob.version)),
          };
        }),
      ),
      writes: await Promise.all(
        source.writes.map(async (write): Promise<WriteRow> => {
          if (!rebind) return { ...write, thread_id: t };
          const [, , value] = await decodeWrite(serde, write);
          return {
            ...write,
            thread_id: t,
            value: await encode(serde, "re-encrypt a write", value, rowRef.write(t, write.checkpoint_ns, write.checkpoint_id, write.task_id, write.idx)),
          };
        }),
      ),
    };
    const latest = latestOf(moved.checkpoints);
    await this.#writes.write(
      THREAD_STORES,
      async (tx) => {
        const bounds = prefixBounds(t);
        const existing = await tx.objectStore("checkpoints").count(ranges.bound(bounds.lower, bounds.upper));
        if (existing > 0) {
          throw new Error(`copyThread: the target thread "${t}" already has ${existing} checkpoints; delete it first or choose another id.`);
        }
        for (const row of moved.checkpoints) issue(tx.objectStore("checkpoints").put(row));
        for (const blob of moved.blobs) issue(tx.objectStore("blobs").put(blob));
        for (const write of moved.writes) issue(tx.objectStore("writes").put(write));
        if (latest) {
          await tx.objectStore("threads").put({
            thread_id: t,
            updated_at: this.#now(),
            latest: { checkpoint_ns: latest.checkpoint_ns, checkpoint_id: latest.checkpoint_id, metadata: latest.metadata },
          });
        }
      },
      "copy thread",
      false,
    );
    this.#feed.emit({ threadId: t, kind: "copy" });
  }

  /**
   * Shrinks threads. `"keep_latest"` (the default) keeps the newest
   * checkpoint of every namespace (or the newest `keepLast`), with its
   * pending writes and the channel values it uses, and deletes the rest;
   * `"delete"` deletes the threads (`deleteThread`).
   *
   * Delta channels (`MessagesDeltaValue`) are never emptied: their value
   * lives in ancestors' writes. Pass the graph's channels (`{ channels:
   * graph.channels }`) and the kept checkpoint gets a `DeltaSnapshot` of the
   * rebuilt value, so its ancestors can go; without them the ancestors back
   * to the nearest snapshot are kept.
   */
  async prune(threadIds: string[], options: PruneOptions = {}): Promise<void> {
    const strategy = options.strategy ?? "keep_latest";
    if (strategy !== "keep_latest" && strategy !== "delete") {
      throw new Error(`prune: unknown strategy "${String(strategy)}"; use "keep_latest" or "delete".`);
    }
    const keepLast = options.keepLast ?? 1;
    if (!Number.isInteger(keepLast) || keepLast < 1) {
      throw new Error(`prune: keepLast must be a positive integer (got ${String(keepLast)}).`);
    }
    if (!Array.isArray(threadIds)) throw new Error("prune: threadIds must be an array of thread ids.");
    for (const threadId of threadIds) assertId("thread_id", threadId);
    for (const threadId of new Set(threadIds)) {
      if (strategy === "delete") await this.deleteThread(threadId);
      else await this.#pruneThread(threadId, keepLast, options.channels);
    }
  }

  async #pruneThread(threadId: string, keepLast: number, channels: PruneOptions["channels"]): Promise<void> {
    const ranges = this.#db.ranges;
    const rows = await this.#db.read(["checkpoints"], (tx) => threadRows(tx, ranges, "checkpoints", threadId), "read the thread to prune");
    if (rows.length === 0) return;
    const serde = await this.#serde();
    const byNs = new Map<string, CheckpointRow[]>();
    for (const row of rows) byNs.set(row.checkpoint_ns, [...(byNs.get(row.checkpoint_ns) ?? []), row]);
    const keep = new Set<string>();
    const kept: CheckpointRow[] = [];
    for (const nsRows of byNs.values()) {
      nsRows.sort((a, b) => (a.checkpoint_id < b.checkpoint_id ? 1 : a.checkpoint_id > b.checkpoint_id ? -1 : 0));
      for (const row of nsRows.slice(0, keepLast)) {
        keep.add(rowId(row));
        kept.push(row);
      }
    }
    if (kept.length === rows.length) return;

    // Delta channels the kept checkpoints rebuild from ancestors' writes.
    const snapshots: BlobRow[] = [];
    for (const row of kept) {
      const metadata = await decodeMetadata(serde, row);
      const counters = (metadata as { counters_since_delta_snapshot?: Record<string, unknown> }).counters_since_delta_snapshot ?? {};
      const deltas = Object.keys(counters).filter((channel) => row.channel_versions[channel] !== undefined);
      if (deltas.length === 0) continue;
      const config = { configurable: { thread_id: threadId, checkpoint_ns: row.checkpoint_ns, checkpoint_id: row.checkpoint_id } };
      const tuple = await this.getTuple(config);
      const missing = deltas.filter((channel) => !(channel in (tuple?.checkpoint.channel_values ?? {})));
      const materialize = missing.filter((channel) => isDeltaChannelLike(channels?.[channel]));
      const chained = missing.filter((channel) => !materialize.includes(channel));
      if (materialize.length > 0) {
        const history = await this.getDeltaChannelHistory({ config, channels: materialize });
        for (const channel of materialize) {
          const rebuilt = (channels![channel] as DeltaChannelLike).fromCheckpoint(history[channel]!.seed);
          rebuilt.replayWrites(history[channel]!.writes);
          const version = row.channel_versions[channel]!;
          snapshots.push({
            thread_id: threadId,
            checkpoint_ns: row.checkpoint_ns,
            channel,
            version,
            value: await encode(
              serde,
              `snapshot channel "${channel}"`,
              new DeltaSnapshot(rebuilt.get()),
              rowRef.blob(threadId, row.checkpoint_ns, channel, version),
            ),
          });
        }
      }
      if (chained.length > 0) {
        const walk = await this.#db.read(["checkpoints", "blobs", "writes"], (tx) => walkAncestors(tx, ranges, row, chained), "walk delta history");
        const depth = Math.max(...chained.map((channel) => walk.seeds.get(channel)?.depth ?? walk.path.length - 1));
        for (const id of walk.path.slice(0, depth + 1)) keep.add(`${row.checkpoint_ns}\u0000${id}`);
      }
    }

    const doomed = rows.filter((row) => !keep.has(rowId(row)));
    if (doomed.length === 0 && snapshots.length === 0) return;
    await this.#writes.write(
      THREAD_STORES,
      async (tx) => {
        for (const row of doomed) this.#deleteCheckpointRows(tx, row);
        for (const blob of snapshots) issue(tx.objectStore("blobs").put(blob));
        // Blobs no remaining checkpoint uses (rows put meanwhile included).
        const [remaining, blobKeys] = await Promise.all([
          threadRows(tx, ranges, "checkpoints", threadId),
          tx.objectStore("blobs").getAllKeys(ranges.bound(...(Object.values(prefixBounds(threadId)) as [IDBValidKey, IDBValidKey]))),
        ]);
        const used = new Set<string>();
        for (const row of remaining) {
          for (const [channel, version] of Object.entries(row.channel_versions)) used.add(blobId(row.checkpoint_ns, channel, version));
        }
        for (const key of blobKeys) if (!used.has(blobId(key[1], key[2], key[3]))) issue(tx.objectStore("blobs").delete(key));
        await this.#refreshThread(tx, threadId, remaining);
      },
      "prune thread",
      false,
    );
    this.#feed.emit({ threadId, kind: "prune" });
  }

  /**
   * Deletes the checkpoints whose `metadata.run_id` is one of `runIds`, in
   * every thread and namespace, with their pending writes and the channel
   * values only they use. Finds them through the run index (no scan).
   */
  async deleteForRuns(runIds: string[]): Promise<void> {
    if (!Array.isArray(runIds)) throw new Error("deleteForRuns: runIds must be an array of run ids.");
    for (const runId of runIds) assertId("run_id", runId);
    if (runIds.length === 0) return;
    const ranges = this.#db.ranges;
    const touched = await this.#writes.write(
      THREAD_STORES,
      async (tx) => {
        const checkpoints = tx.objectStore("checkpoints");
        const keyLists = await Promise.all([...new Set(runIds)].map((runId) => checkpoints.index("by_run").getAllKeys(runId)));
        const keys = keyLists.flat();
        if (keys.length === 0) return [];
        const doomed = (await Promise.all(keys.map((key) => checkpoints.get(key)))).filter((row): row is CheckpointRow => !!row);
        const doomedIds = new Set(doomed.map((row) => `${row.thread_id}\u0000${rowId(row)}`));
        // With versions unique per branch, the checkpoints that use a blob are
        // connected: a surviving user of a doomed row's blob is its parent or
        // a child. Look only there.
        const neighbours = await Promise.all(
          doomed.map(async (row) => {
            const children = await checkpoints.index("by_parent").getAll([row.thread_id, row.checkpoint_ns, row.checkpoint_id]);
            const parent = row.parent_checkpoint_id
              ? await checkpoints.get([row.thread_id, row.checkpoint_ns, row.parent_checkpoint_id])
              : undefined;
            return [...children, ...(parent ? [parent] : [])];
          }),
        );
        const used = new Set<string>();
        for (const row of neighbours.flat()) {
          if (doomedIds.has(`${row.thread_id}\u0000${rowId(row)}`)) continue;
          for (const [channel, version] of Object.entries(row.channel_versions)) {
            used.add(`${row.thread_id}\u0000${blobId(row.checkpoint_ns, channel, version)}`);
          }
        }
        for (const row of doomed) {
          this.#deleteCheckpointRows(tx, row);
          for (const [channel, version] of Object.entries(row.channel_versions)) {
            if (!used.has(`${row.thread_id}\u0000${blobId(row.checkpoint_ns, channel, version)}`)) {
              issue(tx.objectStore("blobs").delete([row.thread_id, row.checkpoint_ns, channel, version]));
            }
          }
        }
        const threads = [...new Set(doomed.map((row) => row.thread_id))];
        for (const threadId of threads) {
          await this.#refreshThread(tx, threadId, await threadRows(tx, ranges, "checkpoints", threadId));
        }
        return threads;
      },
      "delete checkpoints of runs",
      false,
    );
    for (const threadId of touched) this.#feed.emit({ threadId, kind: "delete-runs" });
  }

  /**
   * The threads of this database, most recently updated first, one entry
   * each, from the `threads` store: the cost is the page, not the database.
   *
   * @param options.limit At most this many threads.
   * @param options.offset Skip this many first.
   * @param options.before Only threads last updated strictly before this time (ms).
   * @param options.filter Strict equality on the latest checkpoint's metadata.
   */
  async *listThreads(options: ListThreadsOptions = {}): AsyncGenerator<ThreadInfo> {
    const { limit, before, filter } = options;
    let skip = options.offset ?? 0;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) throw new Error(`listThreads: limit must be a non-negative integer.`);
    if (!Number.isInteger(skip) || skip < 0) throw new Error(`listThreads: offset must be a non-negative integer.`);
    let remaining = limit;
    if (remaining === 0) return;
    const filterEntries = Object.entries(filter ?? {});
    const serde = await this.#serde();
    let last: { updatedAt: number; threadId: string } | undefined;
    // Without a filter the rows needed are known: read no more than that.
    const pageSize =
      filterEntries.length === 0 && remaining !== undefined ? Math.min(LIST_PAGE, remaining + skip) : LIST_PAGE;
    const ranges = this.#db.ranges;
    for (;;) {
      const page = await this.#db.read(
        ["threads", "checkpoints"],
        async (tx) => {
          const upper = last?.updatedAt ?? before ?? Number.MAX_VALUE;
          const range = ranges.bound(-Number.MAX_VALUE, upper, false, last === undefined && before !== undefined);
          const rows: ThreadRow[] = [];
          let cursor = await tx.objectStore("threads").index("by_updated").openCursor(range, "prev");
          while (cursor && rows.length < pageSize) {
            const row = cursor.value;
            // Rows tied on updated_at come in descending thread id: skip those seen.
            if (!(last && row.updated_at === last.updatedAt && row.thread_id >= last.threadId)) rows.push(row);
            if (rows.length < pageSize) cursor = await cursor.continue();
          }
          // What puts do not keep (they write the summary blind): the count
          // and the creation time, from the thread's own rows.
          const checkpoints = tx.objectStore("checkpoints");
          return Promise.all(
            rows.map(async (row) => {
              const all = prefixBounds(row.thread_id);
              const root = prefixBounds(row.thread_id, "");
              const [count, first, newest] = await Promise.all([
                checkpoints.count(ranges.bound(all.lower, all.upper)),
                checkpoints.openCursor(ranges.bound(root.lower, root.upper), "next"),
                checkpoints.openCursor(ranges.bound(root.lower, root.upper), "prev"),
              ]);
              // The newest root checkpoint by id, not the one put last: puts
              // of one thread can commit out of id order (two tabs, two runs,
              // a put whose writes came first).
              const latest = newest
                ? { checkpoint_ns: newest.value.checkpoint_ns, checkpoint_id: newest.value.checkpoint_id, metadata: newest.value.metadata }
                : row.latest;
              return { row, count, createdAt: first?.value.created_at ?? row.updated_at, latest };
            }),
          );
        },
        "list threads",
      );
      for (const { row, count, createdAt, latest } of page) {
        const metadata = latest
          ? ((await decode(serde, "read thread metadata", latest.metadata, rowRef.metadata(row.thread_id, latest.checkpoint_ns, latest.checkpoint_id))) as CheckpointMetadata)
          : undefined;
        if (filterEntries.length > 0 && !filterEntries.every(([key, value]) => (metadata as Record<string, unknown> | undefined)?.[key] === value)) continue;
        if (skip > 0) {
          skip -= 1;
          continue;
        }
        yield {
          threadId: row.thread_id,
          createdAt,
          updatedAt: row.updated_at,
          checkpointCount: count,
          latestCheckpointId: latest?.checkpoint_id,
          metadata,
        };
        if (remaining !== undefined && --remaining <= 0) return;
      }
      if (page.length < pageSize) return;
      const tail = page[page.length - 1]!.row;
      last = { updatedAt: tail.updated_at, threadId: tail.thread_id };
    }
  }

  /** Deletes one checkpoint row and its writes (its blobs are the caller's business). */
  #deleteCheckpointRows(tx: WriteTx, row: CheckpointRow): void {
    issue(tx.objectStore("checkpoints").delete([row.thread_id, row.checkpoint_ns, row.checkpoint_id]));
    const bounds = prefixBounds(row.thread_id, row.checkpoint_ns, row.checkpoint_id);
    issue(tx.objectStore("writes").delete(this.#db.ranges.bound(bounds.lower, bounds.upper)));
  }

  /** Rewrites a thread's summary after checkpoints were removed. */
  async #refreshThread(tx: WriteTx, threadId: string, remaining: CheckpointRow[]): Promise<void> {
    const latest = latestOf(remaining);
    // No checkpoints left: no summary, so listThreads does not show it.
    if (!latest) return void (await tx.objectStore("threads").delete(threadId));
    await tx.objectStore("threads").put({
      thread_id: threadId,
      updated_at: this.#now(),
      latest: { checkpoint_ns: latest.checkpoint_ns, checkpoint_id: latest.checkpoint_id, metadata: latest.metadata },
    });
  }

  // ---------------------------------------------------------------- delta history

  /**
   * The delta-channel history walk in one read-only transaction: parent links
   * from the checkpoint rows, seeds from the blobs, and each channel's writes
   * in one range read of the writes index.
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config, channels } = options;
    if (channels.length === 0) return {};
    if (config.configurable?.thread_id === undefined) {
      return Object.fromEntries(channels.map((channel) => [channel, { writes: [] }]));
    }
    const { threadId, checkpointNs, checkpointId } = configIds(config, "get delta channel history");
    for (const channel of channels) assertId("channel", channel);

    const walked = await this.#db.read(
      ["checkpoints", "blobs", "writes"],
      async (tx) => {
        const target = checkpointId
          ? await tx.objectStore("checkpoints").get([threadId, checkpointNs, checkpointId])
          : await latestRow(tx, this.#db.ranges, threadId, checkpointNs);
        return walkAncestors(tx, this.#db.ranges, target, channels);
      },
      "read delta channel history",
    );

    const serde = await this.#serde();
    const order = new Map(walked.path.map((id, depth) => [id, depth]));
    const result: Record<string, DeltaChannelHistory> = {};
    await Promise.all(
      channels.map(async (channel, i) => {
        const rows = walked.writesByChannel[i]!;
        // Oldest checkpoint first; inside one checkpoint, live execution's order.
        rows.sort((a, b) => {
          const byDepth = order.get(b.checkpoint_id)! - order.get(a.checkpoint_id)!;
          return byDepth !== 0 ? byDepth : compareWritesSortKeys(writeSortKey(a), writeSortKey(b));
        });
        const entry: DeltaChannelHistory = {
          writes: await Promise.all(rows.map((write) => decodeWrite(serde, write))),
        };
        const seed = walked.seeds.get(channel);
        if (seed) entry.seed = await decodeBlob(serde, seed.blob);
        result[channel] = entry;
      }),
    );
    return result;
  }

  // ---------------------------------------------------------------- lifecycle

  /** Closes the database connection; the next call reopens it. */
  async close(): Promise<void> {
    this.#feed.close();
    await this.#db.close();
  }

  /**
   * Listens to changes of this database: every put, delete, copy, prune and
   * deleteForRuns, made by this saver, another saver on the same database in
   * this page, or another tab of the same origin (over a BroadcastChannel).
   *
   * @returns A function that stops listening.
   */
  subscribe(listener: ChangeListener): () => void {
    return this.#feed.subscribe(listener);
  }

  /** A timestamp in ms that strictly increases within this instance. */
  #now(): number {
    this.#lastTime = Math.max(Date.now(), this.#lastTime + 0.001);
    return this.#lastTime;
  }

  // ---------------------------------------------------------------- decoding

  async #decodeTuple(serde: SerializerProtocol, raw: RawTuple, knownMetadata?: CheckpointMetadata): Promise<CheckpointTuple> {
    const { row } = raw;
    const { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } = row;
    const [stored, metadata, blobValues, pendingWrites] = await Promise.all([
      decodeCheckpoint(serde, row),
      knownMetadata ?? decodeMetadata(serde, row),
      Promise.all(raw.blobs.map((blob) => (blob ? decodeBlob(serde, blob) : undefined))),
      Promise.all(sortWrites(raw.writes).map((write) => decodeWrite(serde, write))),
    ]);
    const channelValues: Record<string, unknown> = {};
    const channels = Object.keys(row.channel_versions);
    channels.forEach((channel, i) => {
      if (raw.blobs[i]) channelValues[channel] = blobValues[i];
    });
    const checkpoint: Checkpoint = { ...stored, channel_values: channelValues } as Checkpoint;
    assertVersionsMatch(row, checkpoint);
    if (checkpoint.v < 4 && row.parent_checkpoint_id !== undefined) {
      await this.#migratePendingSends(serde, checkpoint, row);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } },
      checkpoint,
      metadata,
      pendingWrites,
    };
    if (row.parent_checkpoint_id !== undefined) {
      tuple.parentConfig = {
        configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: row.parent_checkpoint_id },
      };
    }
    return tuple;
  }

  /**
   * Checkpoints before format v4 kept pending `Send`s as writes to TASKS on
   * the parent; v4 keeps them as a channel value. Rebuild that value on read.
   */
  async #migratePendingSends(serde: SerializerProtocol, checkpoint: Checkpoint, row: CheckpointRow): Promise<void> {
    const parentId = row.parent_checkpoint_id!;
    const parentWrites = await this.#db.read(
      ["writes"],
      (tx) => {
        const bounds = prefixBounds(row.thread_id, row.checkpoint_ns, parentId);
        return tx.objectStore("writes").getAll(this.#db.ranges.bound(bounds.lower, bounds.upper));
      },
      "read pending sends",
    );
    const sends = sortWrites(parentWrites.filter((write) => write.channel === TASKS));
    const values = await Promise.all(sends.map(async (write) => (await decodeWrite(serde, write))[2]));
    checkpoint.channel_values[TASKS] = values;
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
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
      const [checkpoint, metadata] = await Promise.all([
        rewrite(r.checkpoint, rowRef.checkpoint(r.thread_id, r.checkpoint_ns, r.checkpoint_id)),
        rewrite(r.metadata, rowRef.metadata(r.thread_id, r.checkpoint_ns, r.checkpoint_id)),
      ]);
      if (!checkpoint && !metadata) return undefined;
      return { ...r, checkpoint: checkpoint ?? r.checkpoint, metadata: metadata ?? r.metadata } as SaverSchema[S]["value"];
    }
    case "blobs": {
      const r = row as BlobRow;
      const value = await rewrite(r.value, rowRef.blob(r.thread_id, r.checkpoint_ns, r.channel, r.version));
      return value ? ({ ...r, value } as SaverSchema[S]["value"]) : undefined;
    }
    case "writes": {
      const r = row as WriteRow;
      if (isTombstoneWrite(r)) return undefined;
      const value = await rewrite(r.value, rowRef.write(r.thread_id, r.checkpoint_ns, r.checkpoint_id, r.task_id, r.idx));
      return value ? ({ ...r, value } as SaverSchema[S]["value"]) : undefined;
    }
    default: {
      const r = row as ThreadRow;
      if (!r.latest) return undefined;
      const metadata = await rewrite(r.latest.metadata, rowRef.metadata(r.thread_id, r.latest.checkpoint_ns, r.latest.checkpoint_id));
      return metadata ? ({ ...r, latest: { ...r.latest, metadata } } as SaverSchema[S]["value"]) : undefined;
    }
  }
}
