/**
 * `SyncServerSaver`: a LangGraph checkpoint saver on the sync server's own
 * tables, for one user, so a server-side agent continues a synced
 * (plaintext) thread directly, and the devices pull its turns like any other
 * device's. Rows are encoded exactly as `IndexedDBSaver` encodes them (same
 * serializer, same row layout), so they travel to browsers byte for byte.
 */
/// <reference types="node" />
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { Pool } from "pg";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import {
  assertId,
  configIds,
  decodeBlob,
  decodeCheckpoint,
  decodeMetadata,
  decodeWrite,
  encode,
  missingThreadIdMessage,
  nextChannelVersion,
  putInput,
  rowRef,
  serializeValues,
  sortWrites,
  type BlobRow,
  type CheckpointRow,
  type WriteRow,
} from "../rows/index.js";
import { ProtocolError, SYNC_PROTOCOL_VERSION, type WireCheckpoint, type WireWrite } from "../sync/protocol.js";
import { parseCheckpoint } from "../sync/protocol-checks.js";
import { newestId, readCheckpoints } from "./reads.js";
import { readWrites } from "./bundles.js";
import { DEFAULT_STORE_LIMITS, addWrites, push, type StoreLimits } from "./store.js";

/** The device id the server's own writes carry: every browser pulls them. */
const SERVER_DEVICE = "server";

/**
 * A checkpoint saver over one user's synced threads on the sync server.
 * Get one from `server.saverFor(userId)`; plaintext users only (an
 * encrypted user's rows cannot be read without the passphrase).
 *
 * @example
 * ```ts
 * const graph = workflow.compile({ checkpointer: server.saverFor("ada") });
 * await graph.invoke(input, { configurable: { thread_id: "started-on-ada's-phone" } });
 * ```
 */
export class SyncServerSaver extends BaseCheckpointSaver<number> {
  readonly #pool: Pool;
  readonly #userId: string;
  readonly #limits: StoreLimits;

  /**
   * @param limits What one checkpoint may hold, as the server that made it
   *   applies to devices (`createSyncServer`'s `limits`).
   */
  constructor(
    pool: Pool,
    userId: string,
    serde: SerializerProtocol = new MsgpackSerializer(),
    limits: StoreLimits = DEFAULT_STORE_LIMITS,
  ) {
    super(serde);
    if (typeof userId !== "string" || userId.length === 0)
      throw new TypeError("SyncServerSaver: a user id is required.");
    this.#pool = pool;
    this.#userId = userId;
    this.#limits = limits;
  }

  /** Versions unique across forks, as `IndexedDBSaver` makes them (devices and server share blobs). */
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current as number | string | undefined);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    if (config.configurable?.thread_id === undefined) return undefined;
    const { threadId, checkpointNs, checkpointId } = configIds(config, "get checkpoint");
    const [wire] = await readCheckpoints(this.#pool, this.#userId, { threadId, checkpointNs, checkpointId, limit: 1 });
    return wire ? this.#tuple(wire) : undefined;
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter, limit } = options;
    if (limit !== undefined && limit <= 0) return;
    const configurable = config.configurable ?? {};
    const threadId = (configurable.thread_id as string | undefined) || undefined;
    const checkpointNs = configurable.checkpoint_ns as string | undefined;
    const checkpointId = (configurable.checkpoint_id as string | undefined) || undefined;
    const beforeId = (before?.configurable?.checkpoint_id as string | undefined) || undefined;
    const entries = Object.entries(filter ?? {});
    const wires = await readCheckpoints(this.#pool, this.#userId, {
      threadId,
      checkpointNs,
      checkpointId,
      before: beforeId,
      // The filter applies before the limit: without one the limit goes to the query.
      limit: entries.length === 0 ? limit : undefined,
    });
    let remaining = limit;
    for (const wire of wires) {
      const tuple = await this.#tuple(wire);
      if (!entries.every(([key, value]) => (tuple.metadata as Record<string, unknown> | undefined)?.[key] === value))
        continue;
      yield tuple;
      if (remaining !== undefined && --remaining <= 0) return;
    }
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const input = putInput(config, checkpoint, metadata);
    const { threadId, checkpointNs, parentId, withoutValues } = input;
    const id = input.checkpointId;
    const storedMetadata = input.metadata;
    const serde = this.serde;
    const wire: WireCheckpoint = {
      thread_id: threadId,
      checkpoint_ns: checkpointNs,
      checkpoint_id: id,
      checkpoint: await encode(
        serde,
        "serialize the checkpoint",
        withoutValues,
        rowRef.checkpoint(threadId, checkpointNs, id, parentId),
      ),
      metadata: await encode(
        serde,
        "serialize the checkpoint metadata",
        storedMetadata,
        rowRef.metadata(threadId, checkpointNs, id),
      ),
      channel_versions: { ...checkpoint.channel_versions },
      blobs: (await serializeValues(serde, input, newVersions)).map(({ channel, version, value }) => ({
        channel,
        version,
        value,
      })),
      writes: [],
    };
    if (parentId !== undefined) wire.parent_checkpoint_id = parentId;
    if (typeof storedMetadata.run_id === "string") wire.run_id = storedMetadata.run_id;
    checkPullable(wire, "put checkpoint");
    await push(this.#pool, this.#userId, this.#limits, {
      v: SYNC_PROTOCOL_VERSION,
      device: SERVER_DEVICE,
      checkpoints: [wire],
      deletes: [],
    });
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: id } };
  }

  override async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = "",
  ): Promise<void> {
    if (config.configurable?.thread_id === undefined) throw new Error(missingThreadIdMessage("put writes"));
    const { threadId, checkpointNs, checkpointId } = configIds(config, "put writes");
    if (checkpointId === undefined) {
      throw new Error(
        `Failed to put writes. The passed RunnableConfig is missing a required "checkpoint_id" field in its "configurable" property.`,
      );
    }
    assertId("task_id", taskId);
    const rows: WireWrite[] = await Promise.all(
      writes.map(async ([channel, value], position) => {
        const idx = WRITES_IDX_MAP[channel] ?? position;
        return {
          task_id: taskId,
          idx,
          channel,
          task_path: taskPath,
          value: await encode(
            this.serde,
            `serialize a write to "${channel}"`,
            value,
            rowRef.write(threadId, checkpointNs, checkpointId, taskId, idx, channel, taskPath),
          ),
        };
      }),
    );
    if (rows.length === 0) return;
    const ids = { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId };
    const empty: WireCheckpoint["checkpoint"] = ["", new Uint8Array()];
    checkPullable(
      { ...ids, checkpoint: empty, metadata: empty, channel_versions: {}, blobs: [], writes: rows },
      "put writes",
    );
    await addWrites(
      this.#pool,
      this.#userId,
      { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId },
      rows,
      SERVER_DEVICE,
      this.#limits,
    );
  }

  override async deleteThread(threadId: string): Promise<void> {
    assertId("thread_id", threadId);
    const max = await newestId(this.#pool, this.#userId, threadId);
    if (max === undefined) return;
    await push(this.#pool, this.#userId, this.#limits, {
      v: SYNC_PROTOCOL_VERSION,
      device: SERVER_DEVICE,
      checkpoints: [],
      deletes: [{ thread_id: threadId, max_deleted_id: max }],
    });
  }

  /** A stored bundle as LangGraph's tuple, decoded as `IndexedDBSaver` decodes its rows. */
  async #tuple(wire: WireCheckpoint): Promise<CheckpointTuple> {
    const t = wire.thread_id;
    const ns = wire.checkpoint_ns;
    const row: CheckpointRow = {
      thread_id: t,
      checkpoint_ns: ns,
      checkpoint_id: wire.checkpoint_id,
      checkpoint: wire.checkpoint,
      metadata: wire.metadata,
      channel_versions: wire.channel_versions,
      created_at: 0,
    };
    // The parent link is part of the checkpoint's binding (version 2).
    if (wire.parent_checkpoint_id !== undefined) row.parent_checkpoint_id = wire.parent_checkpoint_id;
    // So is a version 3 row's `chain`; this saver writes plaintext rows without one.
    if (wire.chain !== undefined) row.chain = wire.chain;
    if (wire.parent_writes !== undefined) row.parent_writes = wire.parent_writes;
    const blobs: BlobRow[] = wire.blobs.map((b) => ({
      thread_id: t,
      checkpoint_ns: ns,
      channel: b.channel,
      version: b.version,
      value: b.value,
    }));
    const writes: WriteRow[] = wire.writes.map((w) => ({
      thread_id: t,
      checkpoint_ns: ns,
      checkpoint_id: wire.checkpoint_id,
      ...w,
    }));
    const [stored, metadata, values, pending] = await Promise.all([
      decodeCheckpoint(this.serde, row),
      decodeMetadata(this.serde, row),
      Promise.all(blobs.map((blob) => decodeBlob(this.serde, blob))),
      Promise.all(sortWrites(writes).map((write) => decodeWrite(this.serde, write))),
    ]);
    const channelValues: Record<string, unknown> = {};
    blobs.forEach((blob, i) => (channelValues[blob.channel] = values[i]));
    const checkpoint = { ...stored, channel_values: channelValues } as Checkpoint;
    if (checkpoint.v < 4 && wire.parent_checkpoint_id !== undefined) {
      // Before format v4, pending Sends were writes to TASKS on the parent; v4 keeps them as a channel value.
      const parentWrites: WriteRow[] = (await readWrites(this.#pool, this.#userId, t, ns, wire.parent_checkpoint_id))
        .filter((w) => w.channel === TASKS)
        .map((w) => ({ thread_id: t, checkpoint_ns: ns, checkpoint_id: wire.parent_checkpoint_id!, ...w }));
      checkpoint.channel_values[TASKS] = await Promise.all(
        sortWrites(parentWrites).map(async (w) => (await decodeWrite(this.serde, w))[2]),
      );
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] =
        versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: t, checkpoint_ns: ns, checkpoint_id: wire.checkpoint_id } },
      checkpoint,
      metadata,
      pendingWrites: pending,
    };
    if (wire.parent_checkpoint_id !== undefined) {
      tuple.parentConfig = {
        configurable: { thread_id: t, checkpoint_ns: ns, checkpoint_id: wire.parent_checkpoint_id },
      };
    }
    return tuple;
  }
}

/**
 * Throws unless `wire` (its ids, versions and writes) is what a device's
 * push may carry: devices check every pulled checkpoint by the same rules
 * and refuse a page holding one that breaks them, so an agent's checkpoint
 * with a thread id over 1,024 characters, stored, failed every device's
 * pull and thread list for good, its other threads too.
 */
function checkPullable(wire: WireCheckpoint, action: string): void {
  try {
    parseCheckpoint(wire);
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    throw new Error(`SyncServerSaver: failed to ${action}: ${error.message} Devices could not pull it.`, {
      cause: error,
    });
  }
}
