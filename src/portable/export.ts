/** Exporting a thread from any saver into the versioned file format (docs/export-format.md). */
import type { BaseCheckpointSaver, CheckpointMetadata, CheckpointPendingWrite } from "@langchain/langgraph-checkpoint";
import { crc32 } from "../core/crc32.js";

import { MsgpackSerializer } from "../serde/msgpack/index.js";
import {
  type BlobRecord,
  type CheckpointRecord,
  type Fingerprint,
  GENERATOR,
  KIND,
  SIGNATURE,
  THREAD_EXPORT_FORMAT,
  THREAD_EXPORT_MEDIA_TYPE,
  type ThreadExportCounts,
  type ThreadExportHeader,
  type ThreadExportTrailer,
  type TaskPathsRecord,
  assertThreadId,
  fingerprint,
  frame,
  hex32,
  ownValue,
  samePrint,
  saverName,
} from "./format.js";
import type { ExportThreadOptions, ThreadExport } from "./options.js";
import { ThreadExportError } from "./errors.js";
import { joinBytes, toHex, utf8 } from "../core/bytes.js";
import { BOUND_EXPORT_VERSION, bindsFrames, encodeFrame } from "./frames.js";
import { blobIdentity, checkpointIdentity } from "../core/identity.js";
import { offeredTaskPaths } from "../core/task-paths.js";
import type { Version } from "../rows/shapes.js";
// ------------------------------------------------------------------ export

/** One checkpoint as the first pass over `list` saw it. */
export interface Planned {
  ns: string;
  id: string;
  parent: string | undefined;
}

/** What the first pass learned: write order and counts. */
export interface ExportPlan {
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
 * one chunk per checkpoint with the blobs it introduces, then the task paths and the trailer),
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
  const plainSerde = new MsgpackSerializer();
  const serde = options.serde ?? plainSerde;
  const { signal, onProgress } = options;
  signal?.throwIfAborted();
  const exportedAt = new Date().toISOString();
  const plan = await planExport(saver, threadId, signal);
  const [serdeType] = await serde.dumpsTyped({});

  // A serializer that binds rows (EncryptedSerializer) gets version 2: each
  // record bound to this file and its place in it (frames.ts).
  const bound = bindsFrames(serde);
  const header: ThreadExportHeader = {
    format: THREAD_EXPORT_FORMAT,
    version: bound ? BOUND_EXPORT_VERSION : 1,
    threadId,
    source: options.source ?? saverName(saver),
    serde: serdeType,
    counts: plan.counts,
    namespaces: plan.namespaces,
    exportedAt,
    generator: GENERATOR,
  };
  if (bound) header.exportId = toHex(crypto.getRandomValues(new Uint8Array(16)));
  let crc = 0;
  const emit = (parts: Uint8Array[]): Uint8Array<ArrayBuffer> => {
    const chunk = joinBytes(parts);
    crc = crc32(crc, chunk);
    return chunk;
  };
  yield emit([SIGNATURE, frame(KIND.HEADER, utf8(JSON.stringify(header)))]);
  onProgress?.({ checkpoints: 0, total: plan.counts.checkpoints });

  let position = 0; // the header is frame 0
  const encode = async (record: BlobRecord | CheckpointRecord | TaskPathsRecord, kind: number): Promise<Uint8Array> => {
    const [type, bytes] = await encodeFrame(serde, header, ++position, kind, record);
    if (type !== serdeType) {
      throw new ThreadExportError(
        `exportThread: the serializer wrote a "${type}" record after announcing "${serdeType}"; use a serializer with one type tag for objects.`,
      );
    }
    return bytes;
  };
  // The saver's own reader (IndexedDBSaver) must agree with its tuples; MemorySaver's is a guess.
  const offer = offeredTaskPaths(saver);
  const own = await offer?.[0](threadId);
  // A subclass that overrides getTuple reads its way: its tuples are the ones to export.
  const ownTuples = saver.getTuple === offer?.[1];
  const taskPaths = own ?? memorySaverPaths(saver, threadId);
  const paths: TaskPathsRecord = { checkpoints: [] };
  /** Blob key → fingerprint of the first value written under it. */
  const blobPrints = new Map<string, Fingerprint>();
  const written: ThreadExportCounts = { checkpoints: 0, blobs: 0, writes: 0 };

  for (const planned of plan.order) {
    signal?.throwIfAborted();
    // The saver's reader gives the tuple with its writes' task paths, from one read of its rows.
    const read = await own?.(planned.ns, planned.id);
    const tuple = ownTuples
      ? read?.tuple
      : await saver.getTuple({
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
      const version = ownValue(versions, channel) as Version | undefined;
      if (version === undefined) {
        record.values[channel] = value;
        continue;
      }
      const key = blobIdentity(planned.ns, channel, version);
      const blob: BlobRecord = { ns: planned.ns, channel, version, value };
      // Sealed bytes differ on every call (fresh IVs): compare plain ones then.
      const plain = bound ? (await plainSerde.dumpsTyped(blob))[1] : await encode(blob, KIND.BLOB);
      const print = await fingerprint(plain);
      const known = blobPrints.get(key);
      if (known === undefined) {
        blobPrints.set(key, print);
        parts.push(frame(KIND.BLOB, bound ? await encode(blob, KIND.BLOB) : plain));
        written.blobs += 1;
        record.blobs.push(channel);
      } else if (samePrint(known, print)) {
        record.blobs.push(channel);
      } else {
        // Two values under one version (a saver with colliding versions on forks): keep this one inline.
        record.values[channel] = value;
      }
    }
    if (record.writes.length > 0 && taskPaths) {
      const listed = (read ?? (await taskPaths(planned.ns, planned.id)))?.writes;
      const aligned = listed && alignedPaths(listed, record.writes);
      if (!aligned && own) {
        throw changedDuringExport(threadId, `the pending writes of checkpoint ${planned.id} changed`);
      }
      if (aligned?.some((path) => path !== ""))
        paths.checkpoints.push({ ns: planned.ns, id: planned.id, paths: aligned });
    }
    parts.push(frame(KIND.CHECKPOINT, await encode(record, KIND.CHECKPOINT)));
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
  // The task paths after the last checkpoint (the frames before them are what a file without
  // paths holds), in the trailer's chunk; the CRC covers them, not the trailer.
  const tail = paths.checkpoints.length > 0 ? [emit([frame(KIND.PATHS, await encode(paths, KIND.PATHS))])] : [];
  const trailer: ThreadExportTrailer = { ...written, crc32: hex32(crc) };
  yield joinBytes([...tail, frame(KIND.END, utf8(JSON.stringify(trailer)))]);
}

/** First pass: every checkpoint's identity and parent, in write order, and the counts. */
export async function planExport(
  saver: BaseCheckpointSaver,
  threadId: string,
  signal?: AbortSignal,
): Promise<ExportPlan> {
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
    seen.set(checkpointIdentity(ns, id), {
      ns,
      id,
      parent: typeof parentId === "string" && parentId !== "" ? parentId : undefined,
    });
    writes += tuple.pendingWrites?.length ?? 0;
    const versions = tuple.checkpoint.channel_versions ?? {};
    for (const channel of Object.keys(tuple.checkpoint.channel_values ?? {})) {
      const version = ownValue(versions, channel) as Version | undefined;
      if (version !== undefined) blobKeys.add(blobIdentity(ns, channel, version));
    }
  }
  if (seen.size === 0) throw new ThreadExportError(`exportThread: thread "${threadId}" has no checkpoints.`);

  // Ascending id (creation order for LangGraph's time-ordered ids), but
  // always a parent before its children within a namespace.
  const sorted = [...seen.values()].sort((a, b) =>
    a.id !== b.id ? (a.id < b.id ? -1 : 1) : a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0,
  );
  const order: Planned[] = [];
  const placed = new Set<Planned>();
  for (const start of sorted) {
    const chain: Planned[] = [];
    const onChain = new Set<Planned>();
    for (let at: Planned | undefined = start; at && !placed.has(at);) {
      if (onChain.has(at)) {
        throw new ThreadExportError(
          `exportThread: the parent links of thread "${threadId}" (namespace "${at.ns}") form a cycle at checkpoint ${at.id}: the rows were altered outside the saver.`,
        );
      }
      chain.push(at);
      onChain.add(at);
      at = at.parent === undefined ? undefined : seen.get(checkpointIdentity(at.ns, at.parent));
    }
    for (const planned of chain.reverse()) {
      placed.add(planned);
      order.push(planned);
    }
  }
  const namespaces = [...new Set(order.map((planned) => planned.ns))].sort();
  return { order, namespaces, counts: { checkpoints: order.length, blobs: blobKeys.size, writes } };
}

/** Errors made by {@link changedDuringExport}: a writer was busy on the thread, not a thread that cannot export. */
const changedErrors = new WeakSet<object>();

/** The error for a thread that changed between the two passes. */
export function changedDuringExport(threadId: string, what: string): ThreadExportError {
  const error = new ThreadExportError(
    `exportThread: thread "${threadId}" changed while it was being exported (${what}). Export it again when no run is writing to it.`,
  );
  changedErrors.add(error);
  return error;
}

/** True for an export that failed because another writer changed the thread meanwhile. */
export function isChangedDuringExport(error: unknown): boolean {
  return typeof error === "object" && error !== null && changedErrors.has(error);
}

/** The paths of `listed` when it names the same writes as `writes`, in the same order. */
function alignedPaths(listed: [string, string, string][], writes: CheckpointPendingWrite[]): string[] | undefined {
  if (listed.length !== writes.length) return undefined;
  const same = listed.every(([taskId, channel], i) => taskId === writes[i]![0] && channel === writes[i]![1]);
  return same ? listed.map(([, , path]) => path) : undefined;
}

/**
 * The task paths LangGraph's MemorySaver keeps (its `_orderedWrites`, the
 * order its `getTuple` returns writes in); undefined for other savers. Only
 * paths that line up with the tuple's writes are used, so a MemorySaver that
 * keeps them otherwise exports without paths, as before.
 */
function memorySaverPaths(
  saver: BaseCheckpointSaver,
  threadId: string,
): ((ns: string, checkpointId: string) => Promise<{ writes: [string, string, string][] } | undefined>) | undefined {
  const ordered = (saver as { _orderedWrites?: unknown })._orderedWrites;
  if (typeof ordered !== "function") return undefined;
  return async (ns, checkpointId) => {
    let entries: unknown;
    try {
      entries = await ordered.call(saver, threadId, ns, checkpointId);
    } catch {
      return undefined;
    }
    if (!Array.isArray(entries)) return undefined;
    const out: [string, string, string][] = [];
    for (const entry of entries) {
      const stored: unknown = Array.isArray(entry) ? entry[2] : undefined;
      if (!Array.isArray(stored) || typeof stored[0] !== "string" || typeof stored[1] !== "string") return undefined;
      out.push([stored[0], stored[1], typeof stored[3] === "string" ? stored[3] : ""]);
    }
    return { writes: out };
  };
}
