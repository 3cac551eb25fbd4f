/**
 * What every saver function works with: the database, the group-commit
 * batcher, the change feed, and the serializer bound to this database.
 *
 * The `IndexedDBSaver` facade builds one context and hands it to the
 * functions of this folder; they never see the facade, so no function calls
 * back into a public method.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { WriteBatcher } from "../idb/batch.js";
import type { Database } from "../idb/database.js";
import {
  bindSerializer,
  checkKeyId,
  keyChanged,
  keyIdOf,
  type BoundSerializer,
  type KeyRecord,
} from "../serde/protocol.js";
import { ChangeFeed } from "./events.js";
import { SAVER_FORMAT, isNewerFormat, type SaverSchema, type SaverStoreName } from "./schema.js";
import { keyIdWrite, type MetaRow } from "../rows/shapes.js";
import type { WriteTx } from "./tombstones.js";
import { issue, storePut } from "../idb/requests.js";
import { IndexedDBCheckpointError } from "../core/errors.js";
import { failuresModule } from "../serde/lazy.js";

/** Where the facade keeps its serializer (`BaseCheckpointSaver#serde`), which `changeKey` replaces. */
export interface SerdeSlot {
  get(): SerializerProtocol;
  set(serde: SerializerProtocol): void;
}

/**
 * What a `put` checks in its transaction before it commits: that the
 * database's key is still `keyId`, and that its parent checkpoint exists or
 * is not one of a deleted thread (see put.ts). Pending writes aimed at that
 * parent, in the same transaction and sealed under the same key, need no
 * guard reads of their own: had either check failed, the put would have
 * aborted the transaction, and each write would run again alone.
 * @internal
 */
export interface PutChecks {
  threadId: string;
  checkpointNs: string;
  parentId: string;
  keyId: string | undefined;
}

/** The state shared by the saver's functions. @internal */
export interface SaverContext {
  readonly db: Database<SaverSchema>;
  /** Group commit of writes (see idb/batch.ts), with what a put checks in its transaction. */
  readonly writes: WriteBatcher<SaverSchema, PutChecks>;
  readonly feed: ChangeFeed;
  readonly slot: SerdeSlot;
  /** The serializer bound to this database, resolved once (a wrong passphrase fails here). */
  serde(): Promise<SerializerProtocol>;
  /** The same, with the id of the key it seals under, for writes that check it. */
  bind(): Promise<BoundSerializer>;
  /** Forgets the bound serializer (after a key change). */
  unbind(): void;
  /** Forgets it because another tab changed the key: binding again fails with `KeyChangedError` if the key no longer opens the record. */
  stale(): void;
  /** The database's key record, if any. */
  readKeyRecord(): Promise<KeyRecord | undefined>;
  /**
   * Stores `record` (with its key-id copy) in one transaction, if `when`,
   * run first in that transaction, says so; resolves to whether it did.
   */
  storeKeyRecord(record: KeyRecord, when: (tx: WriteTx) => Promise<boolean>): Promise<boolean>;
  /** A timestamp in ms that strictly increases within this saver: checkpoint rows' `created_at`. */
  now(): number;
  /**
   * The time pending writes are stamped with (`written_at`): the clock, never
   * below a stamp {@link SaverContext.now} gave, and not moving it. Sync's
   * scans need no more (sync/changes.ts); a write stamped past the clock
   * would push the next checkpoint's stamp ahead of it, and such a put
   * writes its thread's summary even when it could leave it (put.ts).
   */
  writeTime(): number;
  /**
   * The `meta` "format" record's value as last read or written: a put that
   * keeps values inline writes 2 in its own transaction while it is not.
   */
  rowFormat: unknown;
}

/**
 * Aborts a write transaction (see `withCurrentKey`) whose values were sealed
 * under another key than the one the database's key record (`row`, the
 * `meta` "key" row read in that transaction) names now. @internal
 */
export function checkKeyRow(ctx: SaverContext, bound: BoundSerializer, row: MetaRow | undefined): void {
  checkKeyId(bound, keyIdOf(ctx.slot.get(), row?.value as KeyRecord | undefined));
}

/** Builds the context of one saver over `db`. @internal */
export function createSaverContext(db: Database<SaverSchema>, slot: SerdeSlot): SaverContext {
  let bound: Promise<BoundSerializer> | undefined;
  let lastTime = 0;
  // Every operation binds its serializer first, so this read (the format
  // record beside the key record, in the same round trip) is where a
  // database of a newer row format is refused before any row is touched.
  const readRecord = async () => {
    const [key, format] = await db.read(
      ["meta"],
      (tx) => {
        const meta = tx.objectStore("meta");
        return Promise.all([meta.get("key"), meta.get("format")]);
      },
      "read the key record",
    );
    if (isNewerFormat(format?.value)) {
      const { newerFormatMessage } = await failuresModule();
      throw new IndexedDBCheckpointError(newerFormatMessage(db.name, format.value, SAVER_FORMAT));
    }
    ctx.rowFormat = format?.value;
    return key?.value as KeyRecord | undefined;
  };
  /**
   * Stores the key record, with its key-id copy in `writes` (what putWrites
   * checks), in one transaction, when `write` (run first) says so.
   */
  const storeRecord = (record: KeyRecord, write: (tx: WriteTx) => Promise<boolean>) =>
    db.write(
      ["meta", "writes"] as SaverStoreName[],
      async (tx) => {
        if (!(await write(tx))) return false;
        const keyId = keyIdOf(slot.get(), record);
        if (keyId !== undefined) issue(storePut(tx.objectStore("writes"), keyIdWrite(keyId)));
        await storePut(tx.objectStore("meta"), { name: "key", value: record });
        return true;
      },
      "store the key record",
    );
  const feed = new ChangeFeed(db.name);
  /** Another tab announced a key change since this saver last bound. */
  let changed = false;
  const ctx: SaverContext = {
    db,
    writes: new WriteBatcher(db),
    feed,
    slot,
    serde() {
      return ctx.bind().then((b) => b.serde);
    },
    bind() {
      bound ??= bindSerializer(
        slot.get(),
        readRecord,
        (record) => storeRecord(record, async (tx) => !(await tx.objectStore("meta").getKey("key"))),
        async (record) => void (await storeRecord(record, async () => true)),
        {
          name: db.name,
          populated: () =>
            db.read(["checkpoints"], async (tx) => (await tx.objectStore("checkpoints").count()) > 0, "count rows"),
        },
      ).then(
        (b) => {
          changed = false;
          // Another tab's key change drops the binding at once (the check in
          // every write transaction is what guarantees it).
          if (b.keyId !== undefined) feed.onKeyChange(ctx.stale);
          return b;
        },
        async (error: unknown) => {
          bound = undefined;
          throw changed ? await keyChanged(db.name, error) : error;
        },
      );
      return bound;
    },
    unbind() {
      bound = undefined;
    },
    stale() {
      changed = true;
      bound = undefined;
    },
    readKeyRecord: readRecord,
    storeKeyRecord: storeRecord,
    now() {
      lastTime = Math.max(Date.now(), lastTime + 0.001);
      return lastTime;
    },
    writeTime() {
      return Math.max(Date.now(), lastTime);
    },
    rowFormat: undefined,
  };
  return ctx;
}
