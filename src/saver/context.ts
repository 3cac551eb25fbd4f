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
import { sameClone } from "../core/equality.js";
import { bindSerializer, type KeyRecord, type KeyRecordAccess } from "../serde/protocol.js";
import { ChangeFeed } from "./events.js";
import type { SaverSchema } from "./schema.js";
import { storePut } from "../idb/requests.js";

/** Where the facade keeps its serializer (`BaseCheckpointSaver#serde`), which `changeKey` replaces. */
export interface SerdeSlot {
  get(): SerializerProtocol;
  set(serde: SerializerProtocol): void;
}

/** The state shared by the saver's functions. @internal */
export interface SaverContext {
  readonly db: Database<SaverSchema>;
  /** Group commit of writes (see idb/batch.ts). */
  readonly writes: WriteBatcher<SaverSchema>;
  readonly feed: ChangeFeed;
  readonly slot: SerdeSlot;
  /** The serializer bound to this database, resolved once (a wrong passphrase fails here). */
  serde(): Promise<SerializerProtocol>;
  /** Forgets the bound serializer (after a key change). */
  unbind(): void;
  /** Compare-and-swap access to the database's key record. */
  keyRecords(): KeyRecordAccess;
  /** A timestamp in ms that strictly increases within this saver. */
  now(): number;
}

/** Builds the context of one saver over `db`. @internal */
export function createSaverContext(db: Database<SaverSchema>, slot: SerdeSlot): SaverContext {
  let bound: Promise<SerializerProtocol> | undefined;
  let lastTime = 0;
  const readRecord = () =>
    db.read(
      ["meta"],
      async (tx) => (await tx.objectStore("meta").get("key"))?.value as KeyRecord | undefined,
      "read the key record",
    );
  const ctx: SaverContext = {
    db,
    writes: new WriteBatcher(db),
    feed: new ChangeFeed(db.name),
    slot,
    serde() {
      bound ??= bindSerializer(
        slot.get(),
        readRecord,
        (record) =>
          db.write(
            ["meta"],
            async (tx) => {
              const meta = tx.objectStore("meta");
              if (await meta.getKey("key")) return false;
              await storePut(meta, { name: "key", value: record });
              return true;
            },
            "store the key record",
          ),
        (record) =>
          db.write(
            ["meta"],
            async (tx) => void (await storePut(tx.objectStore("meta"), { name: "key", value: record })),
            "store the key record",
          ),
        {
          name: db.name,
          populated: () =>
            db.read(["checkpoints"], async (tx) => (await tx.objectStore("checkpoints").count()) > 0, "count rows"),
        },
      ).catch((error: unknown) => {
        bound = undefined;
        throw error;
      });
      return bound;
    },
    unbind() {
      bound = undefined;
    },
    keyRecords() {
      return {
        read: readRecord,
        replace: async (expected, next) => {
          const swapped = await db.write(
            ["meta"],
            async (tx) => {
              const meta = tx.objectStore("meta");
              if (!sameClone((await meta.get("key"))?.value, expected)) return false;
              await storePut(meta, { name: "key", value: next });
              return true;
            },
            "store the key record",
          );
          if (swapped) bound = undefined;
          return swapped;
        },
      };
    },
    now() {
      lastTime = Math.max(Date.now(), lastTime + 0.001);
      return lastTime;
    },
  };
  return ctx;
}
