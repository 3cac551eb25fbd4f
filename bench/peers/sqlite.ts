/**
 * The sqlite-wasm peer: a bench-only saver on `@sqlite.org/sqlite-wasm` with
 * OPFS storage in a worker, on the official SQLite saver's two tables. It
 * does what `@langchain/langgraph-checkpoint-sqlite` does (the checkpoint with
 * its values in one blob, writes in their own table, serialization with the
 * saver's serde) except that the statements run in a worker, one message per
 * saver call, since OPFS's synchronous access is only offered to workers.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  copyCheckpoint,
  maxChannelVersion,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { SqliteReply, SqliteRequest, StoredRow, WriteRow } from "./sqlite-protocol.js";

/** The sqlite-wasm saver: the page side of the worker in sqlite-worker.ts. */
export class SqliteWasmSaver extends BaseCheckpointSaver {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  #next = 0;

  private constructor() {
    super();
    this.#worker = new Worker(new URL("./sqlite-worker.ts", import.meta.url), { type: "module" });
    this.#worker.onmessage = ({ data }: MessageEvent<SqliteReply>) => {
      const waiter = this.#waiting.get(data.id);
      this.#waiting.delete(data.id);
      if (data.error !== undefined) waiter?.reject(new Error(`sqlite-wasm worker: ${data.error}`));
      else waiter?.resolve(data.result);
    };
  }

  /** A saver on a database in OPFS directory `directory` (a fresh worker, SQLite loaded, tables created). */
  static async open(directory: string): Promise<SqliteWasmSaver> {
    const saver = new SqliteWasmSaver();
    await saver.#ask({ op: "open", directory });
    return saver;
  }

  #ask<T>(request: SqliteRequest): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#worker.postMessage({ id, request });
    });
  }

  async #tuple(row: StoredRow): Promise<CheckpointTuple> {
    const { thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = row;
    const pendingWrites = await Promise.all(
      row.writes.map(
        async (write) =>
          [write.task_id, write.channel, await this.serde.loadsTyped(write.type, write.value)] as [
            string,
            string,
            unknown,
          ],
      ),
    );
    const checkpoint = (await this.serde.loadsTyped(row.type, row.checkpoint)) as Checkpoint;
    if (checkpoint.v < 4 && parent_checkpoint_id)
      await this.#migratePendingSends(checkpoint, thread_id, parent_checkpoint_id);
    return {
      config: { configurable: { thread_id, checkpoint_ns, checkpoint_id } },
      checkpoint,
      metadata: (await this.serde.loadsTyped(row.type, row.metadata)) as CheckpointMetadata,
      parentConfig: parent_checkpoint_id
        ? { configurable: { thread_id, checkpoint_ns, checkpoint_id: parent_checkpoint_id } }
        : undefined,
      pendingWrites,
    };
  }

  /** As the official saver: a checkpoint of format < 4 gets its parent's sends as the tasks channel. */
  async #migratePendingSends(checkpoint: Checkpoint, thread: string, parent: string): Promise<void> {
    const sends = await this.#ask<{ type: string; value: Uint8Array }[]>({
      op: "sends",
      thread,
      parent,
      channel: TASKS,
    });
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = await Promise.all(
      sends.map(({ type, value }) => this.serde.loadsTyped(type, value)),
    );
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length
      ? maxChannelVersion(...versions)
      : this.getNextVersion(undefined);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const { thread_id, checkpoint_ns = "", checkpoint_id } = config.configurable ?? {};
    const row = await this.#ask<StoredRow | undefined>({
      op: "get",
      thread: thread_id,
      ns: checkpoint_ns,
      id: checkpoint_id,
    });
    return row && this.#tuple(row);
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const { thread_id, checkpoint_ns } = config.configurable ?? {};
    const filter = Object.entries(options?.filter ?? {})
      .filter(([, value]) => value !== undefined)
      .map(([key, value]): [string, string] => [`$.${key}`, JSON.stringify(value)]);
    const rows = await this.#ask<StoredRow[]>({
      op: "list",
      thread: thread_id ?? undefined,
      ns: checkpoint_ns ?? undefined,
      before: options?.before?.configurable?.checkpoint_id,
      limit: options?.limit,
      filter,
    });
    for (const row of rows) yield await this.#tuple(row);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) {
    const { thread_id, checkpoint_ns = "", checkpoint_id } = config.configurable ?? {};
    if (!thread_id) throw new Error(`Missing "thread_id" field in passed "config.configurable".`);
    const [[type, serialized], [, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(copyCheckpoint(checkpoint)),
      this.serde.dumpsTyped(metadata),
    ]);
    await this.#ask({
      op: "put",
      row: [thread_id, checkpoint_ns, checkpoint.id, checkpoint_id ?? null, type, serialized, serializedMetadata],
    });
    return { configurable: { thread_id, checkpoint_ns, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const { thread_id, checkpoint_ns = "", checkpoint_id } = config.configurable ?? {};
    if (!thread_id || !checkpoint_id) throw new Error("Missing thread_id or checkpoint_id in config.configurable.");
    const rows = await Promise.all(
      writes.map(async ([channel, value], idx): Promise<WriteRow> => {
        const [type, serialized] = await this.serde.dumpsTyped(value);
        return [
          thread_id,
          checkpoint_ns,
          checkpoint_id,
          taskId,
          WRITES_IDX_MAP[channel] ?? idx,
          channel,
          type,
          serialized,
        ];
      }),
    );
    await this.#ask({ op: "putWrites", rows, replace: writes.every(([channel]) => channel in WRITES_IDX_MAP) });
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.#ask({ op: "deleteThread", thread: threadId });
  }

  /** Closes the database (and with `drop`, deletes its files) and ends the worker. */
  async close(drop = false): Promise<void> {
    await this.#ask({ op: "close", drop });
    this.#worker.terminate();
  }
}
