/**
 * The idb-keyval peer: the pattern apps write by hand. A MemorySaver whose
 * whole contents (its `storage` and `writes` maps) are written to IndexedDB
 * with `idb-keyval` after every write, and loaded back once at start. Reads
 * answer from memory; every write rewrites everything.
 */
import {
  MemorySaver,
  type Checkpoint,
  type CheckpointMetadata,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { createStore, get, set, type UseStore } from "idb-keyval";

const KEY = "memory-saver";

interface Dump {
  storage: MemorySaver["storage"];
  writes: MemorySaver["writes"];
}

/** MemorySaver dumped whole to idb-keyval after each put, putWrites and deleteThread. */
export class KeyvalDumpSaver extends MemorySaver {
  readonly #store: UseStore;

  private constructor(store: UseStore) {
    super();
    this.#store = store;
  }

  /** Opens the saver on database `dbName`, loading the last dump if there is one. */
  static async open(dbName: string): Promise<KeyvalDumpSaver> {
    const saver = new KeyvalDumpSaver(createStore(dbName, "keyval"));
    const dump = await get<Dump>(KEY, saver.#store);
    if (dump) {
      saver.storage = dump.storage;
      saver.writes = dump.writes;
    }
    return saver;
  }

  #dump(): Promise<void> {
    return set(KEY, { storage: this.storage, writes: this.writes } satisfies Dump, this.#store);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) {
    const next = await super.put(config, checkpoint, metadata);
    await this.#dump();
    return next;
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string) {
    await super.putWrites(config, writes, taskId, taskPath);
    await this.#dump();
  }

  /** Closes the connection idb-keyval keeps open, so the database can be deleted. */
  close(): Promise<void> {
    return this.#store("readonly", (store) => store.transaction.db.close());
  }

  override async deleteThread(threadId: string) {
    await super.deleteThread(threadId);
    await this.#dump();
  }
}
