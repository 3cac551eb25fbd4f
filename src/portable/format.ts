/**
 * Portable threads: move a whole thread between any two LangGraph.js
 * checkpoint savers, or through a file.
 *
 * - `exportThread` / `exportThreadStream`: one thread (every
 *   namespace, every checkpoint with its channel values, metadata, parent
 *   link and pending writes) as a versioned, self-describing file.
 * - `importThread`: such a file into any `BaseCheckpointSaver`,
 *   optionally under another thread id. The whole file is validated before
 *   the first write; a failed import removes what it wrote.
 * - `copyThreads`: threads from one saver to another (for example
 *   from the browser's `IndexedDBSaver` to the official Postgres saver on a
 *   server, and back).
 *
 * Only the public saver API is used: `list` (an undefined `checkpoint_ns`
 * lists every namespace) and `getTuple` to read; `put` and `putWrites` to
 * write; and the task paths of pending writes a saver offers
 * (core/task-paths.ts), which `getTuple` does not return. Checkpoint ids, namespaces, parent links, metadata and channel
 * versions are kept verbatim, so a graph continues on the target exactly
 * where it stopped on the source.
 *
 * The file format (versions 1 and 2: signature, frames, header, records,
 * trailer and CRC, and version 2's records bound to their place, see
 * frames.ts) is specified once, in docs/export-format.md; the golden files
 * under test/golden/ freeze it.
 *
 * Import files are untrusted input: validate before use, and refuse
 * `"json"` records (`refuseJson`) when the file comes from elsewhere.
 *
 * @module
 */
import type {
  BaseCheckpointSaver,
  Checkpoint,
  CheckpointMetadata,
  CheckpointPendingWrite,
} from "@langchain/langgraph-checkpoint";

import { ThreadExportError, ThreadFileError } from "./errors.js";
import { joinBytes } from "../core/bytes.js";
import type { Version } from "../rows/shapes.js";

// ------------------------------------------------------------------ format

/** The `format` every header names. */
export const THREAD_EXPORT_FORMAT = "langgraph-thread";

/**
 * The newest format version this module reads. It writes version 1, or 2
 * when the serializer binds values to rows (records bound to their place:
 * see frames.ts).
 */
export const THREAD_EXPORT_VERSION = 2;

/** The media type given to exported Blobs. */
export const THREAD_EXPORT_MEDIA_TYPE = "application/vnd.langgraph-thread";

/** The customary file name extension. */
export const THREAD_EXPORT_EXTENSION = ".lgthread";

/** The first 8 bytes of every file (PNG-style: binary, catches newline and 7-bit mangling). */
export const SIGNATURE = Uint8Array.of(0x89, 0x4c, 0x47, 0x54, 0x0d, 0x0a, 0x1a, 0x0a);

/** Frame kinds; `PATHS` (`p`) is ancillary: readers before it skip it. */
export const KIND = { HEADER: 0x48, BLOB: 0x42, CHECKPOINT: 0x43, END: 0x45, PATHS: 0x70 } as const;

/** Bytes before a frame's payload: kind and length. */
export const FRAME_HEAD = 5;

/** Largest payload a frame can carry. */
export const MAX_PAYLOAD = 0xffff_ffff;

/** Name written as `generator` in headers. */
export const GENERATOR = "langgraph-checkpoint-indexeddb";

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
  /**
   * Version 2: a random id of this export (32 hex digits), bound into every
   * record with its position, so records cannot be moved between files.
   */
  exportId?: string;
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
  version: Version;
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

/**
 * Payload of the `p` frame (at most one, after the last `C`): the task path of
 * each pending write of the checkpoints whose writes have one, parallel to
 * their record's `writes`.
 */
export interface TaskPathsRecord {
  checkpoints: { ns: string; id: string; paths: string[] }[];
}

// ------------------------------------------------------------------ helpers

/** The name of a saver, for headers. */
export function saverName(saver: BaseCheckpointSaver): string {
  const name: unknown = (saver as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" ? name : "BaseCheckpointSaver";
}

/** Throws unless `threadId` is a non-empty string. */
export function assertThreadId(threadId: unknown, caller: string): asserts threadId is string {
  if (typeof threadId !== "string" || threadId === "") {
    throw new TypeError(`${caller}: the thread id must be a non-empty string, got ${JSON.stringify(threadId)}.`);
  }
}

/** An own property, never one inherited from `Object.prototype`. */
export function ownValue(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

/** One frame: kind, big-endian length, payload. */
export function frame(kind: number, payload: Uint8Array): Uint8Array<ArrayBuffer> {
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
export function parseJson(payload: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
  } catch (error) {
    throw new ThreadFileError(`The langgraph-thread ${what} is not valid UTF-8 JSON.`, { cause: error });
  }
}

/** Anything `importThread` reads a file from. */
export type ThreadExportInput = Blob | ArrayBuffer | ArrayBufferView | ReadableStream<Uint8Array>;

/** The whole input as bytes. */
export async function readAll(file: ThreadExportInput): Promise<Uint8Array> {
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
  throw new TypeError(
    "importThread: the file must be a Blob, an ArrayBuffer, a Uint8Array or a ReadableStream of bytes.",
  );
}

/** How an encoded value is remembered: a SHA-256 (hex) when WebCrypto is there, else the bytes. */
export type Fingerprint = string | Uint8Array;

/** The fingerprint of encoded bytes. */
export async function fingerprint(bytes: Uint8Array): Promise<Fingerprint> {
  const subtle = (globalThis as { crypto?: Crypto }).crypto?.subtle;
  if (!subtle) return bytes;
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  let hex = `${bytes.length}:`;
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** True when two fingerprints are of equal bytes. */
export function samePrint(a: Fingerprint, b: Fingerprint): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** 8 lower-case hex digits. */
export function hex32(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/** The signature, frame kinds and frame head size, for tests and tools that inspect files. @internal */
export const FORMAT_INTERNALS = { SIGNATURE, KIND, FRAME_HEAD } as const;
