/**
 * Portable threads: move a whole thread between any two LangGraph.js
 * checkpoint savers, or through a file.
 *
 * - {@link exportThread} / {@link exportThreadStream}: one thread (every
 *   namespace, every checkpoint with its channel values, metadata, parent
 *   link and pending writes) as a versioned, self-describing file.
 * - {@link importThread}: such a file into any `BaseCheckpointSaver`,
 *   optionally under another thread id. The whole file is validated before
 *   the first write; a failed import removes what it wrote.
 * - {@link copyThreads}: threads from one saver to another (for example
 *   from the browser's `IndexedDBSaver` to the official Postgres saver on a
 *   server, and back).
 *
 * Only the public saver API is used: `list` (an undefined `checkpoint_ns`
 * lists every namespace) and `getTuple` to read; `put` and `putWrites` to
 * write. Checkpoint ids, namespaces, parent links, metadata and channel
 * versions are kept verbatim, so a graph continues on the target exactly
 * where it stopped on the source.
 *
 * ## File layout (format `"langgraph-thread"`, version 1)
 *
 * All integers are unsigned big-endian. The file is:
 *
 * ```text
 * offset 0, 8 bytes   signature 89 4C 47 54 0D 0A 1A 0A  ("\x89LGT\r\n\x1A\n")
 * offset 8            frames, back to back, until the end of the file
 *
 * frame:  1 byte      kind (an ASCII letter)
 *         4 bytes     payload length n (uint32, big-endian)
 *         n bytes     payload
 * ```
 *
 * Frame kinds (an upper-case kind is critical: a reader that does not know
 * it must refuse the file; a lower-case kind is ancillary and may be skipped):
 *
 * | kind | count | payload |
 * |---|---|---|
 * | `H` 0x48 | first frame, once | UTF-8 JSON {@link ThreadExportHeader} |
 * | `B` 0x42 | one per distinct `(namespace, channel, version)` value | serializer bytes of {@link BlobRecord} |
 * | `C` 0x43 | one per checkpoint | serializer bytes of {@link CheckpointRecord} |
 * | `E` 0x45 | last frame, once | UTF-8 JSON {@link ThreadExportTrailer} |
 *
 * - "Serializer bytes" are what `serde.dumpsTyped(record)` returned; every
 *   record of a file has the same type tag, named by `header.serde`
 *   (`"msgpack"`: {@link MsgpackSerializer}, which round-trips LangChain
 *   messages, `Send`, `Command`, interrupts, `DeltaSnapshot`, `Map`, `Set`,
 *   `Date`, `Uint8Array`, `undefined`...).
 * - Checkpoint frames come parent first within each namespace (ascending
 *   checkpoint id otherwise), so a reader can `put` them in file order.
 * - A `B` frame precedes the first `C` frame that references it; a `C`
 *   frame lists in `blobs` the channels whose value is the blob of its
 *   `(namespace, channel, channel_versions[channel])`, and carries other
 *   values inline in `values`. Channels in `channel_versions` that are in
 *   neither had no value (delta channels between snapshots): absent stays absent.
 * - The trailer's `crc32` (IEEE 802.3, as zlib's) covers every byte before
 *   the trailer frame (signature included); its counts repeat the header's.
 *
 * @module
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  writesSortKey,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { crc32 } from "../core/crc32.js";
import { joinBytes, utf8 } from "../serde/encrypted/webcrypto.js";
import { IndexedDBCheckpointError } from "../core/errors.js";
import { MsgpackSerializer } from "../serde/msgpack/index.js";

// ------------------------------------------------------------------ format

/** The `format` every header names. */
export const THREAD_EXPORT_FORMAT = "langgraph-thread";

/** The format version this module writes, and the newest it reads. */
export const THREAD_EXPORT_VERSION = 1;

/** The media type given to exported Blobs. */
export const THREAD_EXPORT_MEDIA_TYPE = "application/vnd.langgraph-thread";

/** The customary file name extension. */
export const THREAD_EXPORT_EXTENSION = ".lgthread";

/** The first 8 bytes of every file (PNG-style: binary, catches newline and 7-bit mangling). */
const SIGNATURE = Uint8Array.of(0x89, 0x4c, 0x47, 0x54, 0x0d, 0x0a, 0x1a, 0x0a);

/** Frame kinds. */
const KIND = { HEADER: 0x48, BLOB: 0x42, CHECKPOINT: 0x43, END: 0x45 } as const;

/** Bytes before a frame's payload: kind and length. */
const FRAME_HEAD = 5;

/** Largest payload a frame can carry. */
const MAX_PAYLOAD = 0xffff_ffff;

/** Name written as `generator` in headers. */
const GENERATOR = "langgraph-checkpoint-indexeddb";

/** The JSON header, first frame of every file. */
export interface ThreadExportHeader {
  /** Always {@link THREAD_EXPORT_FORMAT}. */
  format: typeof THREAD_EXPORT_FORMAT;
  /** The format version, {@link THREAD_EXPORT_VERSION} for files written by this version. */
  version: number;
  /** The exported thread's id. */
  threadId: string;
  /** The saver it came from (its class name unless given), e.g. `"IndexedDBSaver"`. */
  source: string;
  /** The type tag of every record payload, e.g. `"msgpack"`. */
  serde: string;
  /** What the file holds. */
  counts: ThreadExportCounts;
  /** The checkpoint namespaces present (`""` is the root graph), sorted. */
  namespaces: string[];
  /** When the export started (ISO 8601). */
  exportedAt: string;
  /** The software that wrote the file. */
  generator: string;
}

/** How many records of each kind a file holds. */
export interface ThreadExportCounts {
  /** Checkpoint (`C`) frames. */
  checkpoints: number;
  /** Blob (`B`) frames: distinct channel values. */
  blobs: number;
  /** Pending writes, over all checkpoints. */
  writes: number;
}

/** The JSON trailer, last frame of every file. */
export interface ThreadExportTrailer extends ThreadExportCounts {
  /** CRC-32 of every byte before the trailer frame, 8 lower-case hex digits. */
  crc32: string;
}

/** Payload of a `B` frame: one channel value, shared by every checkpoint of its version. */
export interface BlobRecord {
  /** Checkpoint namespace. */
  ns: string;
  /** Channel name. */
  channel: string;
  /** The channel version this value belongs to (its type is kept). */
  version: string | number;
  /** The channel value. */
  value: unknown;
}

/** Payload of a `C` frame: one checkpoint. */
export interface CheckpointRecord {
  /** Checkpoint namespace (`""` is the root graph). */
  ns: string;
  /** Checkpoint id (equal to `checkpoint.id`). */
  id: string;
  /** Parent checkpoint id in the same namespace, `null` for none. */
  parent: string | null;
  /** The checkpoint without `channel_values`. */
  checkpoint: Omit<Checkpoint, "channel_values">;
  /** The checkpoint metadata, verbatim. */
  metadata: CheckpointMetadata;
  /** Channels whose value is the `B` record of `(ns, channel, checkpoint.channel_versions[channel])`. */
  blobs: string[];
  /** Channel values carried inline (no version, or not equal to the shared blob of their version). */
  values: Record<string, unknown>;
  /** Pending writes as the saver returned them: `[taskId, channel, value]`, in its order. */
  writes: CheckpointPendingWrite[];
}

// ------------------------------------------------------------------ public types

/** An exported thread: a Blob (the default) or bytes (`as: "bytes"`). */
export type ThreadExport = Blob | Uint8Array;

/** Anything {@link importThread} reads a file from. */
export type ThreadExportInput = Blob | ArrayBuffer | ArrayBufferView | ReadableStream<Uint8Array>;

/** Progress of an export or import. */
export interface ThreadTransferProgress {
  /** Checkpoints done so far. */
  checkpoints: number;
  /** Checkpoints in the thread. */
  total: number;
}

/** Options of {@link exportThread} and {@link exportThreadStream}. */
export interface ExportThreadOptions {
  /** Encodes the records. Default {@link MsgpackSerializer}; pass one with your `types` if the state holds app classes. */
  serde?: SerializerProtocol;
  /** Called after each checkpoint written, and once with 0 before the first. */
  onProgress?: (progress: ThreadTransferProgress) => void;
  /** The `source` named in the header. Default: the saver's class name. */
  source?: string;
  /** Stops the export; the stream errors with the signal's reason. */
  signal?: AbortSignal;
}

/** What to do when the target thread already has checkpoints. */
export type IfThreadExists = "error" | "replace" | "merge";

/** Options of {@link importThread}. */
export interface ImportThreadOptions {
  /** Import under this thread id instead of the file's. */
  targetThreadId?: string;
  /** Decodes the records. Default {@link MsgpackSerializer} (also reads `"json"` records). */
  serde?: SerializerProtocol;
  /**
   * When the target thread already has checkpoints: `"error"` (default, nothing
   * is written), `"replace"` (delete it first) or `"merge"` (add to it; a
   * checkpoint with the same id is overwritten).
   */
  ifExists?: IfThreadExists;
  /** Called after each checkpoint written (with its writes), and once with 0 before the first. */
  onProgress?: (progress: ThreadTransferProgress) => void;
  /** Stops the import between two checkpoints; what was written is removed as for any failure. */
  signal?: AbortSignal;
}

/** What {@link importThread} and {@link validateThreadExport} report. */
export interface ImportThreadResult extends ThreadExportCounts {
  /** The thread written (or that would be written). */
  threadId: string;
  /** The file's header. */
  header: ThreadExportHeader;
}

/** Options of {@link copyThreads}. */
export interface CopyThreadsOptions {
  /**
   * Threads to copy. Default: every thread of the source, from its
   * `listThreads()` when it has one (as `IndexedDBSaver`), else from `list({})`.
   */
  threadIds?: string[];
  /** The target thread id of each source thread. Default: the same id. */
  mapThreadId?: (sourceThreadId: string) => string;
  /** As {@link ImportThreadOptions.ifExists}; default `"error"`. */
  ifExists?: IfThreadExists;
  /** Serializer of the intermediate file; see {@link ExportThreadOptions.serde}. */
  serde?: SerializerProtocol;
  /** Called as each thread is written, and when it is done. */
  onProgress?: (progress: CopyThreadsProgress) => void;
  /** Stops between two checkpoints; the thread being copied is removed from the target. */
  signal?: AbortSignal;
}

/** Progress of {@link copyThreads}. */
export interface CopyThreadsProgress extends ThreadTransferProgress {
  /** The thread being copied (source id). */
  threadId: string;
  /** Threads completely copied so far. */
  threads: number;
  /** Threads to copy. */
  totalThreads: number;
}

/** What {@link copyThreads} did. */
export interface CopyThreadsResult {
  /** Each copied thread: source id, target id and counts, in copy order. */
  threads: (ThreadExportCounts & { sourceThreadId: string; threadId: string })[];
}

// ------------------------------------------------------------------ errors

/**
 * A file that is not a readable `langgraph-thread` export: another format, a
 * newer version, corrupt or truncated bytes, or a record the serializer
 * cannot decode. Thrown before anything is written.
 */
export class ThreadFileError extends IndexedDBCheckpointError {}

/** An export that could not be made: no such thread, or it changed while being read. */
export class ThreadExportError extends IndexedDBCheckpointError {}

/**
 * The import could not write the thread: the target thread already exists
 * (`ifExists: "error"`, nothing written), or a write to the target saver
 * failed or was aborted after the file was validated (or the saver silently
 * dropped a checkpoint). `rolledBack` tells whether the partly written thread
 * was deleted again.
 */
export class ThreadImportError extends IndexedDBCheckpointError {
  /** The target thread. */
  readonly threadId: string;
  /** Checkpoints written before the failure. */
  readonly written: number;
  /** True when the partial thread was removed (it did not exist before, or `ifExists: "replace"`). */
  readonly rolledBack: boolean;

  constructor(message: string, details: { threadId: string; written: number; rolledBack: boolean; cause?: unknown }) {
    super(message, { cause: details.cause });
    this.threadId = details.threadId;
    this.written = details.written;
    this.rolledBack = details.rolledBack;
  }
}

// ------------------------------------------------------------------ export

/** One checkpoint as the first pass over `list` saw it. */
interface Planned {
  ns: string;
  id: string;
  parent: string | undefined;
}

/** What the first pass learned: write order and counts. */
interface ExportPlan {
  order: Planned[];
  counts: ThreadExportCounts;
  namespaces: string[];
}

/**
 * Exports one thread (every namespace) as a file, assembled in memory.
 *
 * @param saver Any checkpoint saver.
 * @param threadId The thread to export.
 * @param options `as: "bytes"` for a `Uint8Array` (Node: `fs.writeFile`);
 *   otherwise a `Blob` of type {@link THREAD_EXPORT_MEDIA_TYPE}.
 * @throws ThreadExportError when the thread has no checkpoints or changes while exported.
 * @throws SerializationError when a value cannot be encoded (register app classes with `serde`).
 *
 * @example
 * ```ts
 * const file = await exportThread(saver, "t1", { onProgress: ({ checkpoints, total }) => bar(checkpoints / total) });
 * const link = Object.assign(document.createElement("a"), { href: URL.createObjectURL(file), download: "t1.lgthread" });
 * ```
 */
export function exportThread(
  saver: BaseCheckpointSaver,
  threadId: string,
  options: ExportThreadOptions & { as: "bytes" },
): Promise<Uint8Array>;
export function exportThread(
  saver: BaseCheckpointSaver,
  threadId: string,
  options?: ExportThreadOptions & { as?: "blob" },
): Promise<Blob>;
export async function exportThread(
  saver: BaseCheckpointSaver,
  threadId: string,
  options: ExportThreadOptions & { as?: "blob" | "bytes" } = {},
): Promise<ThreadExport> {
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  for await (const chunk of exportChunks(saver, threadId, options)) chunks.push(chunk);
  if (options.as === "bytes") return joinBytes(chunks);
  return new Blob(chunks, { type: THREAD_EXPORT_MEDIA_TYPE });
}

/**
 * Exports one thread as a stream of chunks (the signature and header, then
 * one chunk per checkpoint with the blobs it introduces, then the trailer),
 * produced as the consumer reads: pipe it to a file (OPFS, `showSaveFilePicker`,
 * a Node write stream) to keep memory flat for large threads.
 *
 * The thread is read twice: a first pass over `list` counts and orders the
 * checkpoints (the header carries the counts); then each checkpoint is read
 * again with `getTuple` as its chunk is pulled. A thread that changes between
 * the two passes errors the stream with a {@link ThreadExportError}.
 */
export function exportThreadStream(
  saver: BaseCheckpointSaver,
  threadId: string,
  options: ExportThreadOptions = {},
): ReadableStream<Uint8Array<ArrayBuffer>> {
  const chunks = exportChunks(saver, threadId, options);
  return new ReadableStream<Uint8Array<ArrayBuffer>>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
}

/** The file, chunk by chunk: see {@link exportThreadStream}. */
async function* exportChunks(
  saver: BaseCheckpointSaver,
  threadId: string,
  options: ExportThreadOptions,
): AsyncGenerator<Uint8Array<ArrayBuffer>> {
  assertThreadId(threadId, "exportThread");
  const serde = options.serde ?? new MsgpackSerializer();
  const { signal, onProgress } = options;
  signal?.throwIfAborted();
  const exportedAt = new Date().toISOString();
  const plan = await planExport(saver, threadId, signal);
  const [serdeType] = await serde.dumpsTyped({});

  const header: ThreadExportHeader = {
    format: THREAD_EXPORT_FORMAT,
    version: THREAD_EXPORT_VERSION,
    threadId,
    source: options.source ?? saverName(saver),
    serde: serdeType,
    counts: plan.counts,
    namespaces: plan.namespaces,
    exportedAt,
    generator: GENERATOR,
  };
  let crc = 0;
  const emit = (parts: Uint8Array[]): Uint8Array<ArrayBuffer> => {
    const chunk = joinBytes(parts);
    crc = crc32(crc, chunk);
    return chunk;
  };
  yield emit([SIGNATURE, frame(KIND.HEADER, utf8(JSON.stringify(header)))]);
  onProgress?.({ checkpoints: 0, total: plan.counts.checkpoints });

  const encode = async (record: BlobRecord | CheckpointRecord): Promise<Uint8Array> => {
    const [type, bytes] = await serde.dumpsTyped(record);
    if (type !== serdeType) {
      throw new ThreadExportError(
        `exportThread: the serializer wrote a "${type}" record after announcing "${serdeType}"; use a serializer with one type tag for objects.`,
      );
    }
    return bytes;
  };
  /** Blob key → fingerprint of the first value written under it. */
  const blobPrints = new Map<string, Fingerprint>();
  const written: ThreadExportCounts = { checkpoints: 0, blobs: 0, writes: 0 };

  for (const planned of plan.order) {
    signal?.throwIfAborted();
    const tuple = await saver.getTuple({
      configurable: { thread_id: threadId, checkpoint_ns: planned.ns, checkpoint_id: planned.id },
    });
    if (!tuple) throw changedDuringExport(threadId, `checkpoint ${planned.id} (namespace "${planned.ns}") disappeared`);
    const { channel_values: values = {}, ...checkpoint } = tuple.checkpoint;
    const versions = checkpoint.channel_versions ?? {};
    const parts: Uint8Array[] = [];
    const record: CheckpointRecord = {
      ns: planned.ns,
      id: planned.id,
      parent: planned.parent ?? null,
      checkpoint,
      metadata: tuple.metadata ?? ({} as CheckpointMetadata),
      blobs: [],
      values: {},
      writes: (tuple.pendingWrites ?? []).map(([taskId, channel, value]) => [taskId, channel, value]),
    };
    for (const channel of Object.keys(values)) {
      const value = values[channel];
      const version = ownValue(versions, channel) as string | number | undefined;
      if (version === undefined) {
        record.values[channel] = value;
        continue;
      }
      const key = blobKey(planned.ns, channel, version);
      const bytes = await encode({ ns: planned.ns, channel, version, value });
      const print = await fingerprint(bytes);
      const known = blobPrints.get(key);
      if (known === undefined) {
        blobPrints.set(key, print);
        parts.push(frame(KIND.BLOB, bytes));
        written.blobs += 1;
        record.blobs.push(channel);
      } else if (samePrint(known, print)) {
        record.blobs.push(channel);
      } else {
        // Two values under one version (a saver with colliding versions on forks): keep this one inline.
        record.values[channel] = value;
      }
    }
    parts.push(frame(KIND.CHECKPOINT, await encode(record)));
    written.checkpoints += 1;
    written.writes += record.writes.length;
    yield emit(parts);
    onProgress?.({ checkpoints: written.checkpoints, total: plan.counts.checkpoints });
  }

  if (written.writes !== plan.counts.writes || written.blobs !== plan.counts.blobs) {
    throw changedDuringExport(
      threadId,
      `it had ${plan.counts.writes} pending writes and ${plan.counts.blobs} channel values, then ${written.writes} and ${written.blobs}`,
    );
  }
  const trailer: ThreadExportTrailer = { ...written, crc32: hex32(crc) };
  yield emit([frame(KIND.END, utf8(JSON.stringify(trailer)))]);
}

/** First pass: every checkpoint's identity and parent, in write order, and the counts. */
async function planExport(saver: BaseCheckpointSaver, threadId: string, signal?: AbortSignal): Promise<ExportPlan> {
  const seen = new Map<string, Planned>();
  const blobKeys = new Set<string>();
  let writes = 0;
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    signal?.throwIfAborted();
    const configurable = tuple.config.configurable ?? {};
    if (configurable.thread_id !== undefined && configurable.thread_id !== threadId) continue;
    const ns = String(configurable.checkpoint_ns ?? "");
    const id = String(configurable.checkpoint_id ?? tuple.checkpoint.id);
    const parentId: unknown = tuple.parentConfig?.configurable?.checkpoint_id;
    seen.set(rowKey(ns, id), { ns, id, parent: typeof parentId === "string" && parentId !== "" ? parentId : undefined });
    writes += tuple.pendingWrites?.length ?? 0;
    const versions = tuple.checkpoint.channel_versions ?? {};
    for (const channel of Object.keys(tuple.checkpoint.channel_values ?? {})) {
      const version = ownValue(versions, channel) as string | number | undefined;
      if (version !== undefined) blobKeys.add(blobKey(ns, channel, version));
    }
  }
  if (seen.size === 0) throw new ThreadExportError(`exportThread: thread "${threadId}" has no checkpoints.`);

  // Ascending id (creation order for LangGraph's time-ordered ids), but
  // always a parent before its children within a namespace.
  const sorted = [...seen.values()].sort((a, b) => (a.id !== b.id ? (a.id < b.id ? -1 : 1) : a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0));
  const order: Planned[] = [];
  const placed = new Set<Planned>();
  for (const start of sorted) {
    const chain: Planned[] = [];
    const onChain = new Set<Planned>();
    for (let at: Planned | undefined = start; at && !placed.has(at) && !onChain.has(at); ) {
      chain.push(at);
      onChain.add(at);
      at = at.parent === undefined ? undefined : seen.get(rowKey(at.ns, at.parent));
    }
    for (const planned of chain.reverse()) {
      placed.add(planned);
      order.push(planned);
    }
  }
  const namespaces = [...new Set(order.map((planned) => planned.ns))].sort();
  return { order, namespaces, counts: { checkpoints: order.length, blobs: blobKeys.size, writes } };
}

/** The error for a thread that changed between the two passes. */
function changedDuringExport(threadId: string, what: string): ThreadExportError {
  return new ThreadExportError(
    `exportThread: thread "${threadId}" changed while it was being exported (${what}). Export it again when no run is writing to it.`,
  );
}

// ------------------------------------------------------------------ import

/** One frame's place in the file. */
interface FrameRef {
  kind: number;
  /** Offset of the kind byte. */
  start: number;
  payload: Uint8Array;
}

/** A file that passed validation: its header and frames. */
interface ValidFile {
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
    throw new TypeError(`importThread: ifExists must be "error", "replace" or "merge", not ${JSON.stringify(ifExists)}.`);
  }
  const { signal, onProgress } = options;
  signal?.throwIfAborted();
  const valid = await validate(await readAll(file), serde, signal);
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
        const key = blobKey(ns, channel, versions[channel]!);
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
        const key = blobKey(ns, channel, versions[channel]!);
        if (stored.has(key)) continue;
        stored.add(key);
        newVersions[channel] = versions[channel]!;
      }
      const config: RunnableConfig = {
        configurable: { thread_id: threadId, checkpoint_ns: ns, ...(record.parent !== null ? { checkpoint_id: record.parent } : {}) },
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
      const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } });
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
    const reason = error instanceof Error ? error.message : String(error);
    throw new ThreadImportError(
      `importThread: writing thread "${threadId}" failed after ${written} of ${counts.checkpoints} checkpoints: ${reason}. ` +
        (rolledBack
          ? "The partly imported thread was deleted again."
          : owned
            ? "Deleting the partly imported thread failed too: delete it before retrying."
            : "The thread existed before (ifExists: \"merge\") and may now be partly imported."),
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
  options: { serde?: SerializerProtocol; targetThreadId?: string } = {},
): Promise<ImportThreadResult> {
  const { header, counts } = await validate(await readAll(file), options.serde ?? new MsgpackSerializer());
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
  if (bytes.length < start + length) throw new ThreadFileError("The langgraph-thread file is truncated (in its header).");
  return parseHeader(bytes.subarray(start, start + length));
}

/** The header frame's payload length, from the bytes after the signature. */
function headerLength(bytes: Uint8Array): number {
  if (bytes.length < SIGNATURE.length + FRAME_HEAD) throw new ThreadFileError("The langgraph-thread file is truncated (in its header).");
  if (bytes[SIGNATURE.length] !== KIND.HEADER) throw new ThreadFileError("Not a langgraph-thread file: its first record is not a header.");
  return new DataView(bytes.buffer, bytes.byteOffset + SIGNATURE.length + 1, 4).getUint32(0);
}

/** Full validation; see {@link importThread}. */
async function validate(bytes: Uint8Array, serde: SerializerProtocol, signal?: AbortSignal): Promise<ValidFile> {
  checkSignature(bytes);
  // Structure first (cheap): frame boundaries, header, trailer, CRC.
  const frames: FrameRef[] = [];
  for (let offset = SIGNATURE.length; offset < bytes.length; ) {
    const ref = readFrameAt(bytes, offset);
    frames.push(ref);
    offset = ref.start + FRAME_HEAD + ref.payload.length;
  }
  const first = frames[0];
  if (!first || first.kind !== KIND.HEADER) throw new ThreadFileError("Not a langgraph-thread file: its first record is not a header.");
  const header = parseHeader(first.payload);
  const endAt = frames.findIndex((ref) => ref.kind === KIND.END);
  if (endAt < 0) throw new ThreadFileError("The langgraph-thread file is truncated: its end record is missing.");
  if (endAt !== frames.length - 1) throw new ThreadFileError("The langgraph-thread file has data after its end record.");
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
      const key = blobKey(ns, channel, version);
      if (blobs.has(key)) throw recordError(i, `repeats the value of channel "${channel}" version ${String(version)}`);
      blobs.set(key, ref);
      counts.blobs += 1;
    } else if (ref.kind === KIND.CHECKPOINT) {
      const record = checkCheckpoint(await decodeRecord(serde, header, ref), i);
      const versions = record.checkpoint.channel_versions;
      for (const channel of record.blobs) {
        const version = ownValue(versions, channel) as string | number | undefined;
        if (version === undefined || !blobs.has(blobKey(record.ns, channel, version))) {
          throw recordError(i, `refers to a value of channel "${channel}" that no earlier record holds`);
        }
        if (Object.prototype.hasOwnProperty.call(record.values, channel)) {
          throw recordError(i, `has two values for channel "${channel}"`);
        }
      }
      const key = rowKey(record.ns, record.id);
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
function checkSignature(bytes: Uint8Array): void {
  if (bytes.length >= SIGNATURE.length && SIGNATURE.every((byte, i) => bytes[i] === byte)) return;
  let looks = "";
  const start = new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, 64)).trimStart();
  if (start.startsWith("{") || start.startsWith("[")) looks = " (it looks like JSON)";
  else if (bytes.length === 0) looks = " (it is empty)";
  else if (bytes.length < SIGNATURE.length && SIGNATURE.subarray(0, bytes.length).every((byte, i) => bytes[i] === byte)) {
    looks = " (it is truncated)";
  }
  throw new ThreadFileError(
    `Not a langgraph-thread file${looks}: it does not start with the format's signature. Only files written by exportThread can be imported.`,
  );
}

/** The frame at `offset` (before the end of the file). */
function readFrameAt(bytes: Uint8Array, offset: number): FrameRef {
  if (offset + FRAME_HEAD > bytes.length) throw new ThreadFileError("The langgraph-thread file is truncated (in a record header).");
  const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
  const payloadStart = offset + FRAME_HEAD;
  if (payloadStart + length > bytes.length) {
    throw new ThreadFileError(
      `The langgraph-thread file is truncated: a record needs ${length} bytes but only ${bytes.length - payloadStart} remain.`,
    );
  }
  return { kind: bytes[offset]!, start: offset, payload: bytes.subarray(payloadStart, payloadStart + length) };
}

/** Parses and checks the header frame. */
function parseHeader(payload: Uint8Array): ThreadExportHeader {
  const header = parseJson(payload, "header") as Partial<ThreadExportHeader> | null;
  if (typeof header !== "object" || header === null) throw new ThreadFileError("The langgraph-thread header is not an object.");
  if (header.format !== THREAD_EXPORT_FORMAT) {
    throw new ThreadFileError(
      `This file is in format ${JSON.stringify(header.format)}, not ${JSON.stringify(THREAD_EXPORT_FORMAT)}: it cannot be imported as a thread.`,
    );
  }
  const { version } = header;
  if (typeof version !== "number" || !Number.isInteger(version) || version < 1) {
    throw new ThreadFileError(`The langgraph-thread header has an invalid version ${JSON.stringify(version)}.`);
  }
  if (version > THREAD_EXPORT_VERSION) {
    throw new ThreadFileError(
      `This langgraph-thread file is format version ${version}, written by a newer ${String(header.generator ?? "library")}; this version reads up to ${THREAD_EXPORT_VERSION}. Update langgraph-checkpoint-indexeddb to import it.`,
    );
  }
  const counts = header.counts as Partial<ThreadExportCounts> | undefined;
  const countOk = (n: unknown) => typeof n === "number" && Number.isInteger(n) && n >= 0;
  if (
    typeof header.threadId !== "string" ||
    header.threadId === "" ||
    typeof header.serde !== "string" ||
    typeof counts !== "object" ||
    counts === null ||
    !countOk(counts.checkpoints) ||
    !countOk(counts.blobs) ||
    !countOk(counts.writes)
  ) {
    throw new ThreadFileError("The langgraph-thread header lacks its thread id, serializer or counts.");
  }
  return header as ThreadExportHeader;
}

/** Decodes one record with the file's serializer type. */
async function decodeRecord(serde: SerializerProtocol, header: ThreadExportHeader, ref: FrameRef): Promise<unknown> {
  try {
    return await serde.loadsTyped(header.serde, ref.payload);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ThreadFileError(
      `A record of the langgraph-thread file (offset ${ref.start}) cannot be decoded as "${header.serde}": ${reason}` +
        (header.serde === "msgpack" ? " (if the state holds app classes, pass a MsgpackSerializer listing them as serde)." : "."),
      { cause: error },
    );
  }
}

/** Checks a decoded `B` record. */
function checkBlob(value: unknown, index: number): BlobRecord {
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
function checkCheckpoint(value: unknown, index: number): CheckpointRecord {
  const record = value as Partial<CheckpointRecord> | null;
  const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);
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
    !record.writes.every((w) => Array.isArray(w) && w.length === 3 && typeof w[0] === "string" && typeof w[1] === "string")
  ) {
    throw recordError(index, "is not a valid checkpoint record");
  }
  return record as CheckpointRecord;
}

/** A `ThreadFileError` about record `index`. */
function recordError(index: number, what: string): ThreadFileError {
  return new ThreadFileError(`The langgraph-thread file is invalid: record ${index} ${what}.`);
}

/** One `putWrites` call: a task's writes, regular ones first so their idx stays their position. */
interface TaskGroup {
  taskId: string;
  taskPath: string;
  writes: PendingWrite[];
}

/**
 * Groups pending writes by task, in the order they came. When that order is
 * not the task-id order, each group gets a task path that sorts like it.
 */
function taskGroups(writes: CheckpointPendingWrite[]): TaskGroup[] {
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
    const special = (write: CheckpointPendingWrite) => Object.prototype.hasOwnProperty.call(WRITES_IDX_MAP, write[1]);
    const ordered = [...list.filter((write) => !special(write)), ...list.filter(special)];
    return {
      taskId,
      taskPath: inIdOrder ? "" : `~import:${String(i).padStart(width, "0")}`,
      writes: ordered.map(([, channel, value]): PendingWrite => [channel, value]),
    };
  });
}

/** True when the saver has any checkpoint of the thread, in any namespace. */
async function threadExists(saver: BaseCheckpointSaver, threadId: string): Promise<boolean> {
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } }, { limit: 1 })) {
    void tuple;
    return true;
  }
  return false;
}

// ------------------------------------------------------------------ copy

/**
 * Copies threads from one saver to another, each through the export format
 * (so the copy is exactly what an export and import would give), one after
 * the other. Checkpoint ids, namespaces, parent links and metadata are kept.
 *
 * @example
 * ```ts
 * // The user outgrew the browser: move every thread to the server's Postgres.
 * await copyThreads(new IndexedDBSaver({ dbName: "my-app" }), postgresSaver);
 * ```
 * @throws ThreadImportError (the failing thread is removed from the target;
 *   threads copied before it stay) or ThreadExportError.
 */
export async function copyThreads(
  from: BaseCheckpointSaver,
  to: BaseCheckpointSaver,
  options: CopyThreadsOptions = {},
): Promise<CopyThreadsResult> {
  const threadIds = options.threadIds ?? (await allThreadIds(from, options.signal));
  const result: CopyThreadsResult = { threads: [] };
  for (const [index, sourceThreadId] of threadIds.entries()) {
    options.signal?.throwIfAborted();
    const file = await exportThread(from, sourceThreadId, {
      as: "bytes",
      serde: options.serde,
      signal: options.signal,
    });
    const imported = await importThread(to, file, {
      targetThreadId: options.mapThreadId?.(sourceThreadId) ?? sourceThreadId,
      ifExists: options.ifExists,
      serde: options.serde,
      signal: options.signal,
      onProgress: (progress) =>
        options.onProgress?.({ ...progress, threadId: sourceThreadId, threads: index, totalThreads: threadIds.length }),
    });
    result.threads.push({
      sourceThreadId,
      threadId: imported.threadId,
      checkpoints: imported.checkpoints,
      blobs: imported.blobs,
      writes: imported.writes,
    });
    options.onProgress?.({
      threadId: sourceThreadId,
      threads: index + 1,
      totalThreads: threadIds.length,
      checkpoints: imported.checkpoints,
      total: imported.checkpoints,
    });
  }
  return result;
}

/** Every thread id of a saver: its own `listThreads` when it has one, else from `list({})`. */
async function allThreadIds(saver: BaseCheckpointSaver, signal?: AbortSignal): Promise<string[]> {
  const ids = new Set<string>();
  const listThreads = (saver as { listThreads?: unknown }).listThreads;
  if (typeof listThreads === "function") {
    for await (const thread of (listThreads as () => AsyncIterable<{ threadId: string }>).call(saver)) {
      ids.add(thread.threadId);
    }
    return [...ids];
  }
  for await (const tuple of saver.list({})) {
    signal?.throwIfAborted();
    const threadId: unknown = tuple.config.configurable?.thread_id;
    if (typeof threadId === "string") ids.add(threadId);
  }
  return [...ids];
}

// ------------------------------------------------------------------ helpers

/** The name of a saver, for headers. */
function saverName(saver: BaseCheckpointSaver): string {
  const name: unknown = (saver as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" ? name : "BaseCheckpointSaver";
}

/** Throws unless `threadId` is a non-empty string. */
function assertThreadId(threadId: unknown, caller: string): asserts threadId is string {
  if (typeof threadId !== "string" || threadId === "") {
    throw new TypeError(`${caller}: the thread id must be a non-empty string, got ${JSON.stringify(threadId)}.`);
  }
}

/** An own property, never one inherited from `Object.prototype`. */
function ownValue(object: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined;
}

/** A checkpoint's identity inside its thread. */
function rowKey(ns: string, id: string): string {
  return `${ns}\u0000${id}`;
}

/** A channel value's identity inside its thread (a number and a string version differ). */
function blobKey(ns: string, channel: string, version: string | number): string {
  return `${ns}\u0000${channel}\u0000${typeof version}:${String(version)}`;
}

/** One frame: kind, big-endian length, payload. */
function frame(kind: number, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  if (payload.length > MAX_PAYLOAD) {
    throw new ThreadExportError(`exportThread: a record of ${payload.length} bytes exceeds the format's 4 GiB limit.`);
  }
  const out = new Uint8Array(FRAME_HEAD + payload.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, FRAME_HEAD);
  return out;
}

/** JSON from UTF-8 bytes, or a `ThreadFileError`. */
function parseJson(payload: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
  } catch (error) {
    throw new ThreadFileError(`The langgraph-thread ${what} is not valid UTF-8 JSON.`, { cause: error });
  }
}

/** The whole input as bytes. */
async function readAll(file: ThreadExportInput): Promise<Uint8Array> {
  if (file instanceof Uint8Array) return file;
  if (file instanceof ArrayBuffer) return new Uint8Array(file);
  if (ArrayBuffer.isView(file)) return new Uint8Array(file.buffer, file.byteOffset, file.byteLength);
  if (typeof Blob !== "undefined" && file instanceof Blob) return new Uint8Array(await file.arrayBuffer());
  if (typeof ReadableStream !== "undefined" && file instanceof ReadableStream) {
    const chunks: Uint8Array[] = [];
    const reader = (file as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    return joinBytes(chunks);
  }
  throw new TypeError("importThread: the file must be a Blob, an ArrayBuffer, a Uint8Array or a ReadableStream of bytes.");
}

/** How an encoded value is remembered: a SHA-256 (hex) when WebCrypto is there, else the bytes. */
type Fingerprint = string | Uint8Array;

/** The fingerprint of encoded bytes. */
async function fingerprint(bytes: Uint8Array): Promise<Fingerprint> {
  const subtle = (globalThis as { crypto?: Crypto }).crypto?.subtle;
  if (!subtle) return bytes;
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  let hex = `${bytes.length}:`;
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** True when two fingerprints are of equal bytes. */
function samePrint(a: Fingerprint, b: Fingerprint): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}


/** 8 lower-case hex digits. */
function hex32(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/** The signature, frame kinds and frame head size, for tests and tools that inspect files. @internal */
export const FORMAT_INTERNALS = { SIGNATURE, KIND, FRAME_HEAD } as const;
