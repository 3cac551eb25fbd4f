/** Importing (and validating) a thread file into any saver. */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  writesSortKey,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointPendingWrite,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { crc32 } from "../core/crc32.js";
import { MsgpackSerializer } from "../serde/msgpack/index.js";
import {
  type BlobRecord,
  type CheckpointRecord,
  FRAME_HEAD,
  KIND,
  SIGNATURE,
  type ThreadExportCounts,
  type ThreadExportHeader,
  type ThreadExportTrailer,
  assertThreadId,
  hex32,
  ownValue,
  parseJson,
  readAll,
} from "./format.js";
import type { ImportThreadOptions, ImportThreadResult, ThreadExportInput } from "./options.js";
import { ThreadFileError, ThreadImportError } from "./errors.js";
import { decodeRecord, parseHeader, type FrameRef } from "./frames.js";
import { errorMessage } from "../core/guards.js";
import { blobIdentity, checkpointIdentity } from "../core/identity.js";
// ------------------------------------------------------------------ import

/** A file that passed validation: its header and frames. */
export interface ValidFile {
  header: ThreadExportHeader;
  frames: FrameRef[];
  /** Blob key → its frame. */
  blobs: Map<string, FrameRef>;
  counts: ThreadExportCounts;
}

/**
 * Imports an exported thread into any checkpoint saver.
 *
 * The whole file is read and validated first (signature, format and
 * version, CRC, every record decoded, every reference resolved); a file that
 * fails is rejected with a {@link ThreadFileError} before anything is
 * written. Then each checkpoint is `put` in file order (parent first), with
 * `newVersions` naming the channel versions not written before (so
 * blob-per-version savers such as Postgres store every value once), followed
 * by its pending writes, one `putWrites` per task in the order the source
 * returned them. If a write fails, the thread is deleted again when the
 * import created it (or replaced it) and a {@link ThreadImportError} is thrown.
 *
 * Pending writes keep their source order: when that order is not the task-id
 * order, each task's writes are given a task path (`"~import:000001"`, ...)
 * that sorts like the source, which savers ordering by `(task_path, task_id, idx)`
 * (IndexedDBSaver, MemorySaver) honour; SQLite and Postgres order by task id.
 *
 * @param saver The target saver.
 * @param file The file, as a Blob, bytes or a stream.
 * @param options `targetThreadId`, `ifExists`, `serde`, `onProgress`, `signal`.
 * @returns The thread id written and the counts.
 */
export async function importThread(
  saver: BaseCheckpointSaver,
  file: ThreadExportInput,
  options: ImportThreadOptions = {},
): Promise<ImportThreadResult> {
  const serde = options.serde ?? new MsgpackSerializer();
  const ifExists = options.ifExists ?? "error";
  if (!["error", "replace", "merge"].includes(ifExists)) {
    throw new TypeError(
      `importThread: ifExists must be "error", "replace" or "merge", not ${JSON.stringify(ifExists)}.`,
    );
  }
  const { signal, onProgress } = options;
  signal?.throwIfAborted();
  const valid = await validate(await readAll(file), serde, signal, options.refuseJson);
  const { header, counts } = valid;
  const threadId = options.targetThreadId ?? header.threadId;
  assertThreadId(threadId, "importThread");

  const exists = await threadExists(saver, threadId);
  if (exists && ifExists === "error") {
    throw new ThreadImportError(
      `importThread: thread "${threadId}" already has checkpoints in the target saver. Pass targetThreadId to import under another id, or ifExists: "replace" | "merge".`,
      { threadId, written: 0, rolledBack: false },
    );
  }
  if (exists && ifExists === "replace") await saver.deleteThread(threadId);
  const owned = !exists || ifExists === "replace";
  // A saver that keeps tombstones of deleted threads (IndexedDBSaver) would
  // drop checkpoints whose parents predate the delete: a restore is not a
  // late write of a run in flight, so lift the tombstone first.
  const revivable = saver as BaseCheckpointSaver & { clearTombstone?: (threadId: string) => Promise<void> };
  if (typeof revivable.clearTombstone === "function") await revivable.clearTombstone(threadId);

  let written = 0;
  try {
    onProgress?.({ checkpoints: 0, total: counts.checkpoints });
    /** Blob keys already handed to `put` (in `newVersions`). */
    const stored = new Set<string>();
    /** The last checkpoint written in each namespace. */
    const lastInNamespace = new Map<string, string>();
    /** Last decoded value of each `(ns, channel)`: consecutive checkpoints share most values. */
    const recent = new Map<string, { key: string; value: unknown }>();
    for (const ref of valid.frames) {
      if (ref.kind !== KIND.CHECKPOINT) continue;
      signal?.throwIfAborted();
      const record = (await decodeRecord(serde, header, ref)) as CheckpointRecord;
      const { ns, id } = record;
      const versions = record.checkpoint.channel_versions ?? {};
      const values: Record<string, unknown> = {};
      for (const channel of record.blobs) {
        const key = blobIdentity(ns, channel, versions[channel]!);
        const slot = `${ns}\u0000${channel}`;
        let cached = recent.get(slot);
        if (cached?.key !== key) {
          const blob = (await decodeRecord(serde, header, valid.blobs.get(key)!)) as BlobRecord;
          cached = { key, value: blob.value };
          recent.set(slot, cached);
        }
        values[channel] = cached.value;
      }
      for (const channel of Object.keys(record.values)) values[channel] = record.values[channel];

      const newVersions: ChannelVersions = {};
      for (const channel of Object.keys(versions)) {
        const key = blobIdentity(ns, channel, versions[channel]!);
        if (stored.has(key)) continue;
        stored.add(key);
        newVersions[channel] = versions[channel]!;
      }
      const config: RunnableConfig = {
        configurable: {
          thread_id: threadId,
          checkpoint_ns: ns,
          ...(record.parent !== null ? { checkpoint_id: record.parent } : {}),
        },
      };
      const checkpoint = { ...record.checkpoint, channel_values: values } as Checkpoint;
      await saver.put(config, checkpoint, record.metadata, newVersions);

      const target: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } };
      for (const group of taskGroups(record.writes)) {
        await saver.putWrites(target, group.writes, group.taskId, group.taskPath);
      }
      written += 1;
      lastInNamespace.set(ns, id);
      onProgress?.({ checkpoints: written, total: counts.checkpoints });
    }
    // A saver may drop a checkpoint without failing (IndexedDBSaver ignores
    // late writes to a deleted thread, and then their descendants): check that
    // the last one of each namespace arrived.
    for (const [ns, id] of lastInNamespace) {
      const tuple = await saver.getTuple({
        configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id },
      });
      if (!tuple) {
        throw new Error(
          `the target saver did not keep checkpoint ${id} (namespace "${ns}") although put() succeeded; a saver that drops late writes to a deleted thread does this`,
        );
      }
    }
  } catch (error) {
    let rolledBack = false;
    if (owned) {
      try {
        await saver.deleteThread(threadId);
        rolledBack = true;
      } catch {
        // Reported through rolledBack: the original failure matters more.
      }
    }
    const reason = errorMessage(error);
    throw new ThreadImportError(
      `importThread: writing thread "${threadId}" failed after ${written} of ${counts.checkpoints} checkpoints: ${reason}. ` +
        (rolledBack
          ? "The partly imported thread was deleted again."
          : owned
            ? "Deleting the partly imported thread failed too: delete it before retrying."
            : 'The thread existed before (ifExists: "merge") and may now be partly imported.'),
      { threadId, written, rolledBack, cause: error },
    );
  }
  return { threadId, header, ...counts };
}

/**
 * Reads and checks a whole file without writing anything: what
 * {@link importThread} does before its first write.
 *
 * @throws ThreadFileError naming what is wrong.
 */
export async function validateThreadExport(
  file: ThreadExportInput,
  options: { serde?: SerializerProtocol; targetThreadId?: string; refuseJson?: boolean } = {},
): Promise<ImportThreadResult> {
  const { header, counts } = await validate(
    await readAll(file),
    options.serde ?? new MsgpackSerializer(),
    undefined,
    options.refuseJson,
  );
  return { threadId: options.targetThreadId ?? header.threadId, header, ...counts };
}

/**
 * The header of a file (thread id, source, counts, namespaces), reading
 * only as much as needed; the rest of the file is not checked.
 *
 * @throws ThreadFileError for a file of another format or a newer version.
 */
export async function readThreadExportHeader(file: ThreadExportInput): Promise<ThreadExportHeader> {
  if (typeof Blob !== "undefined" && file instanceof Blob) {
    // Read only the signature, the first frame's head, then its payload.
    const head = new Uint8Array(await file.slice(0, SIGNATURE.length + FRAME_HEAD).arrayBuffer());
    checkSignature(head);
    const length = headerLength(head);
    const payload = new Uint8Array(await file.slice(head.length, head.length + length).arrayBuffer());
    if (payload.length < length) throw new ThreadFileError("The langgraph-thread file is truncated (in its header).");
    return parseHeader(payload);
  }
  const bytes = await readAll(file);
  checkSignature(bytes);
  const length = headerLength(bytes);
  const start = SIGNATURE.length + FRAME_HEAD;
  if (bytes.length < start + length)
    throw new ThreadFileError("The langgraph-thread file is truncated (in its header).");
  return parseHeader(bytes.subarray(start, start + length));
}

/** The header frame's payload length, from the bytes after the signature. */
export function headerLength(bytes: Uint8Array): number {
  if (bytes.length < SIGNATURE.length + FRAME_HEAD)
    throw new ThreadFileError("The langgraph-thread file is truncated (in its header).");
  if (bytes[SIGNATURE.length] !== KIND.HEADER)
    throw new ThreadFileError("Not a langgraph-thread file: its first record is not a header.");
  return new DataView(bytes.buffer, bytes.byteOffset + SIGNATURE.length + 1, 4).getUint32(0);
}

/** Full validation; see {@link importThread}. */
export async function validate(
  bytes: Uint8Array,
  serde: SerializerProtocol,
  signal?: AbortSignal,
  refuseJson = false,
): Promise<ValidFile> {
  checkSignature(bytes);
  // Structure first (cheap): frame boundaries, header, trailer, CRC.
  const frames: FrameRef[] = [];
  for (let offset = SIGNATURE.length; offset < bytes.length;) {
    const ref = readFrameAt(bytes, offset);
    frames.push({ ...ref, index: frames.length });
    offset = ref.start + FRAME_HEAD + ref.payload.length;
  }
  const first = frames[0];
  if (!first || first.kind !== KIND.HEADER)
    throw new ThreadFileError("Not a langgraph-thread file: its first record is not a header.");
  const header = parseHeader(first.payload, refuseJson);
  const endAt = frames.findIndex((ref) => ref.kind === KIND.END);
  if (endAt < 0) throw new ThreadFileError("The langgraph-thread file is truncated: its end record is missing.");
  if (endAt !== frames.length - 1)
    throw new ThreadFileError("The langgraph-thread file has data after its end record.");
  const end = frames[endAt]!;
  const trailer = parseJson(end.payload, "end record") as Partial<ThreadExportTrailer>;
  const actualCrc = hex32(crc32(0, bytes.subarray(0, end.start)));
  if (trailer.crc32 !== actualCrc) {
    throw new ThreadFileError(
      `The langgraph-thread file is corrupt: its checksum is ${String(trailer.crc32)} but its bytes give ${actualCrc}.`,
    );
  }

  // Then every record, decoded and cross-checked.
  const blobs = new Map<string, FrameRef>();
  const checkpoints = new Set<string>();
  const counts: ThreadExportCounts = { checkpoints: 0, blobs: 0, writes: 0 };
  for (let i = 1; i < endAt; i++) {
    signal?.throwIfAborted();
    const ref = frames[i]!;
    if (ref.kind === KIND.BLOB) {
      const blob = await decodeRecord(serde, header, ref);
      const { ns, channel, version } = checkBlob(blob, i);
      const key = blobIdentity(ns, channel, version);
      if (blobs.has(key)) throw recordError(i, `repeats the value of channel "${channel}" version ${String(version)}`);
      blobs.set(key, ref);
      counts.blobs += 1;
    } else if (ref.kind === KIND.CHECKPOINT) {
      const record = checkCheckpoint(await decodeRecord(serde, header, ref), i);
      const versions = record.checkpoint.channel_versions;
      for (const channel of record.blobs) {
        const version = ownValue(versions, channel) as string | number | undefined;
        if (version === undefined || !blobs.has(blobIdentity(record.ns, channel, version))) {
          throw recordError(i, `refers to a value of channel "${channel}" that no earlier record holds`);
        }
        if (Object.hasOwn(record.values, channel)) {
          throw recordError(i, `has two values for channel "${channel}"`);
        }
      }
      const key = checkpointIdentity(record.ns, record.id);
      if (checkpoints.has(key)) throw recordError(i, `repeats checkpoint ${record.id}`);
      checkpoints.add(key);
      counts.checkpoints += 1;
      counts.writes += record.writes.length;
    } else if (ref.kind >= 0x61 && ref.kind <= 0x7a) {
      // Ancillary (lower-case) kinds are for later versions: skip.
    } else {
      throw new ThreadFileError(
        `The langgraph-thread file holds a record of kind ${JSON.stringify(String.fromCharCode(ref.kind))} that this version cannot read (record ${i}).`,
      );
    }
  }
  for (const [name, actual] of Object.entries(counts) as [keyof ThreadExportCounts, number][]) {
    if (header.counts[name] !== actual || trailer[name] !== actual) {
      throw new ThreadFileError(
        `The langgraph-thread file is inconsistent: it announces ${header.counts[name]} ${name} but holds ${actual}.`,
      );
    }
  }
  return { header, frames, blobs, counts };
}

/** Throws unless the bytes start with the signature, saying what they look like instead. */
export function checkSignature(bytes: Uint8Array): void {
  if (bytes.length >= SIGNATURE.length && SIGNATURE.every((byte, i) => bytes[i] === byte)) return;
  let looks = "";
  const start = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, 64)).trimStart();
  if (start.startsWith("{") || start.startsWith("[")) looks = " (it looks like JSON)";
  else if (bytes.length === 0) looks = " (it is empty)";
  else if (
    bytes.length < SIGNATURE.length &&
    SIGNATURE.subarray(0, bytes.length).every((byte, i) => bytes[i] === byte)
  ) {
    looks = " (it is truncated)";
  }
  throw new ThreadFileError(
    `Not a langgraph-thread file${looks}: it does not start with the format's signature. Only files written by exportThread can be imported.`,
  );
}

/** The frame at `offset` (before the end of the file). */
export function readFrameAt(bytes: Uint8Array, offset: number): FrameRef {
  if (offset + FRAME_HEAD > bytes.length)
    throw new ThreadFileError("The langgraph-thread file is truncated (in a record header).");
  const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
  const payloadStart = offset + FRAME_HEAD;
  if (payloadStart + length > bytes.length) {
    throw new ThreadFileError(
      `The langgraph-thread file is truncated: a record needs ${length} bytes but only ${bytes.length - payloadStart} remain.`,
    );
  }
  return { kind: bytes[offset]!, start: offset, payload: bytes.subarray(payloadStart, payloadStart + length) };
}

/** Checks a decoded `B` record. */
export function checkBlob(value: unknown, index: number): BlobRecord {
  const blob = value as Partial<BlobRecord> | null;
  if (
    typeof blob !== "object" ||
    blob === null ||
    typeof blob.ns !== "string" ||
    typeof blob.channel !== "string" ||
    (typeof blob.version !== "string" && typeof blob.version !== "number") ||
    !("value" in blob)
  ) {
    throw recordError(index, "is not a channel value record");
  }
  return blob as BlobRecord;
}

/** Checks a decoded `C` record. */
export function checkCheckpoint(value: unknown, index: number): CheckpointRecord {
  const record = value as Partial<CheckpointRecord> | null;
  const isObject = (x: unknown): x is Record<string, unknown> =>
    typeof x === "object" && x !== null && !Array.isArray(x);
  if (
    !isObject(record) ||
    typeof record.ns !== "string" ||
    typeof record.id !== "string" ||
    record.id === "" ||
    !(record.parent === null || typeof record.parent === "string") ||
    !isObject(record.checkpoint) ||
    record.checkpoint.id !== record.id ||
    !isObject(record.checkpoint.channel_versions ?? {}) ||
    !isObject(record.metadata) ||
    !Array.isArray(record.blobs) ||
    !record.blobs.every((channel) => typeof channel === "string") ||
    !isObject(record.values) ||
    !Array.isArray(record.writes) ||
    !record.writes.every(
      (w) => Array.isArray(w) && w.length === 3 && typeof w[0] === "string" && typeof w[1] === "string",
    )
  ) {
    throw recordError(index, "is not a valid checkpoint record");
  }
  return record as CheckpointRecord;
}

/** A `ThreadFileError` about record `index`. */
export function recordError(index: number, what: string): ThreadFileError {
  return new ThreadFileError(`The langgraph-thread file is invalid: record ${index} ${what}.`);
}

/** One `putWrites` call: a task's writes, regular ones first so their idx stays their position. */
export interface TaskGroup {
  taskId: string;
  taskPath: string;
  writes: PendingWrite[];
}

/**
 * Groups pending writes by task, in the order they came. When that order is
 * not the task-id order, each group gets a task path that sorts like it.
 */
export function taskGroups(writes: CheckpointPendingWrite[]): TaskGroup[] {
  const byTask = new Map<string, CheckpointPendingWrite[]>();
  for (const write of writes) {
    const list = byTask.get(write[0]);
    if (list) list.push(write);
    else byTask.set(write[0], [write]);
  }
  const taskIds = [...byTask.keys()];
  const inIdOrder = taskIds.every(
    (taskId, i) => i === 0 || compareWritesSortKeys(writesSortKey("", taskIds[i - 1]!), writesSortKey("", taskId)) < 0,
  );
  const width = Math.max(6, String(taskIds.length).length);
  return taskIds.map((taskId, i) => {
    const list = byTask.get(taskId)!;
    const special = (write: CheckpointPendingWrite) => Object.hasOwn(WRITES_IDX_MAP, write[1]);
    const ordered = [...list.filter((write) => !special(write)), ...list.filter(special)];
    return {
      taskId,
      taskPath: inIdOrder ? "" : `~import:${String(i).padStart(width, "0")}`,
      writes: ordered.map(([, channel, value]): PendingWrite => [channel, value]),
    };
  });
}

/** True when the saver has any checkpoint of the thread, in any namespace. */
export async function threadExists(saver: BaseCheckpointSaver, threadId: string): Promise<boolean> {
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } }, { limit: 1 })) {
    void tuple;
    return true;
  }
  return false;
}
