/** Reading and checking a thread file before anything is written (the first half of an import). */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
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
  type TaskPathsRecord,
  assertThreadId,
  hex32,
  ownValue,
  parseJson,
  readAll,
} from "./format.js";
import type { ImportThreadResult, ThreadExportInput } from "./options.js";
import { ThreadFileError } from "./errors.js";
import { decodeRecord, parseHeader, type FrameRef } from "./frames.js";
import { blobIdentity, checkpointIdentity } from "../core/identity.js";
import type { Version } from "../rows/shapes.js";
import { collectVersions, planInput, VersionPlanner, type PlanInput, type PlannedVersions } from "./reversion.js";
import { assertStorableId } from "../rows/ids.js";
import { checkVersions } from "../rows/put-input.js";
import { errorMessage } from "../core/guards.js";

/** A file that passed validation: its header and frames. */
export interface ValidFile {
  header: ThreadExportHeader;
  frames: FrameRef[];
  /** Blob key → its frame. */
  blobs: Map<string, FrameRef>;
  counts: ThreadExportCounts;
  /**
   * The target's versions of each checkpoint (by `checkpointIdentity`):
   * planned here, so a file whose forks cannot be told apart is refused
   * before anything is written (reversion.ts).
   */
  plans: Map<string, PlannedVersions>;
  /** The task path of each pending write, by `checkpointIdentity`, for checkpoints the `p` frame names. */
  taskPaths: Map<string, string[]>;
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
  const threadId = options.targetThreadId ?? header.threadId;
  checkTargetThreadId(threadId, "validateThreadExport");
  return { threadId, header, ...counts };
}

/**
 * Refuses a thread id an import cannot write under (empty, not a string, or
 * one the savers refuse): the import checks it before its first write, and
 * validation with it, so a caller that validates first (a restore of several
 * files) learns it before anything changed.
 */
export function checkTargetThreadId(threadId: unknown, caller: string): asserts threadId is string {
  assertThreadId(threadId, caller);
  assertStorableId("thread_id", threadId);
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
  // Nothing after the signature is a cut download, not another kind of file.
  if (!first)
    throw new ThreadFileError(
      "The langgraph-thread file is truncated: it ends after its signature, before its header.",
    );
  if (first.kind !== KIND.HEADER)
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
  const usedVersions = new Map<string, Set<Version>>();
  /** Each checkpoint's planning input, in file order, with its record number. */
  const inputs: { index: number; input: PlanInput }[] = [];
  /** Records whose parent was not before them: fine if it is not in the file at all (a pruned thread). */
  const laterParents: { index: number; ns: string; parent: string }[] = [];
  const counts: ThreadExportCounts = { checkpoints: 0, blobs: 0, writes: 0 };
  /** Pending writes of each checkpoint, by `checkpointIdentity`: what the `p` frame's paths must line up with. */
  const writeCounts = new Map<string, number>();
  let pathsFrame: { index: number; record: TaskPathsRecord } | undefined;
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
      checkIds(record, i);
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
      if (record.parent !== null && !checkpoints.has(checkpointIdentity(record.ns, record.parent))) {
        laterParents.push({ index: i, ns: record.ns, parent: record.parent });
      }
      checkpoints.add(key);
      writeCounts.set(key, record.writes.length);
      const input = planInput(record);
      collectVersions(input, usedVersions);
      inputs.push({ index: i, input });
      counts.checkpoints += 1;
      counts.writes += record.writes.length;
    } else if (ref.kind === KIND.PATHS) {
      if (pathsFrame) throw recordError(i, "repeats the task paths record");
      pathsFrame = { index: i, record: checkPaths(await decodeRecord(serde, header, ref), i) };
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
  // Parents come first (exportThread refuses a thread whose links loop), so a
  // parent found later means a cycle or a misordered file: the import would
  // write a thread that cannot be read (a walk up its parents never ends).
  for (const { index, ns, parent } of laterParents) {
    if (checkpoints.has(checkpointIdentity(ns, parent))) {
      throw recordError(
        index,
        `names as its parent checkpoint ${parent}, which is not before it: the parent links form a cycle or are out of order`,
      );
    }
  }
  const taskPaths = new Map<string, string[]>();
  for (const { ns, id, paths } of pathsFrame?.record.checkpoints ?? []) {
    const key = checkpointIdentity(ns, id);
    if (writeCounts.get(key) !== paths.length || taskPaths.has(key)) {
      throw recordError(
        pathsFrame!.index,
        `gives ${paths.length} task paths to checkpoint ${id} (namespace "${ns}"), which ${writeCounts.has(key) ? `has ${writeCounts.get(key)} pending writes` : "the file does not hold"}${taskPaths.has(key) ? ", twice" : ""}`,
      );
    }
    taskPaths.set(key, paths);
  }
  // exportThread refuses a thread without checkpoints, so such a file was made
  // by hand; importing it would only delete (ifExists "replace") and report
  // success, and a version-2 one proves nothing: with no record, no key is needed.
  if (counts.checkpoints === 0) {
    throw new ThreadFileError(
      "The langgraph-thread file holds no checkpoint; exportThread never writes such a file, so it is refused.",
    );
  }
  // Two passes: the first counts the new versions each version needs, so the second spreads
  // them evenly over the room there is (reversion.ts).
  const counting = new VersionPlanner(usedVersions);
  for (const { input } of inputs) counting.plan(input);
  const planner = new VersionPlanner(usedVersions, counting.needed);
  const plans = new Map<string, PlannedVersions>();
  for (const { index, input } of inputs) {
    try {
      plans.set(checkpointIdentity(input.ns, input.id), planner.plan(input));
    } catch (error) {
      throw recordError(index, errorMessage(error));
    }
  }
  return { header, frames, blobs, counts, plans, taskPaths };
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
  // A version is a key part in savers that store one value per version: NaN or an infinity
  // there fails the target's write midway (IndexedDB refuses it as a key), after a replace
  // already deleted the thread.
  for (const [channel, version] of Object.entries(record.checkpoint.channel_versions ?? {})) {
    if (!(typeof version === "string" || (typeof version === "number" && Number.isFinite(version)))) {
      throw recordError(
        index,
        `gives channel "${channel}" the version ${String(version)}, not a finite number or a string`,
      );
    }
  }
  return record as CheckpointRecord;
}

/** Checks the decoded `p` record: a list of `{ ns, id, paths }`, each path one a saver stores. */
export function checkPaths(value: unknown, index: number): TaskPathsRecord {
  const entries = (value as Partial<TaskPathsRecord> | null)?.checkpoints;
  const valid =
    Array.isArray(entries) &&
    entries.every(
      (entry: Partial<TaskPathsRecord["checkpoints"][number]> | null) =>
        typeof entry === "object" &&
        entry !== null &&
        typeof entry.ns === "string" &&
        typeof entry.id === "string" &&
        Array.isArray(entry.paths) &&
        entry.paths.every((path) => typeof path === "string"),
    );
  if (!valid) throw recordError(index, "is not a valid task paths record");
  try {
    for (const entry of entries)
      for (const path of entry.paths) assertStorableId("task_path", path, { allowEmpty: true });
  } catch (error) {
    throw recordError(index, `holds a task path that savers refuse: ${errorMessage(error).replace(/\.$/, "")}`);
  }
  return value as TaskPathsRecord;
}

/**
 * Checks the ids a record makes the import write with the rules the savers
 * apply in `put` and `putWrites` (rows/ids.ts, as MemorySaver refuses the
 * same names): a saver refusing one midway would have deleted the thread an
 * `ifExists: "replace"` import replaces, and left the file half written.
 */
export function checkIds(record: CheckpointRecord, index: number): void {
  try {
    assertStorableId("checkpoint_ns", record.ns, { allowEmpty: true });
    assertStorableId("checkpoint.id", record.id);
    if (record.parent !== null) assertStorableId("checkpoint_id", record.parent);
    // Every channel its versions name, those without a value too (no B record, no `values` entry names them).
    checkVersions("checkpoint.channel_versions", record.checkpoint.channel_versions ?? {});
    const runId = ownValue(record.metadata, "run_id");
    if (typeof runId === "string") assertStorableId("metadata.run_id", runId);
    for (const channel of [...record.blobs, ...Object.keys(record.values)]) assertStorableId("channel", channel);
    for (const [taskId, channel] of record.writes) {
      assertStorableId("task_id", taskId);
      assertStorableId("channel", channel);
    }
  } catch (error) {
    // recordError ends the sentence itself.
    throw recordError(index, `holds an id that savers refuse: ${errorMessage(error).replace(/\.$/, "")}`);
  }
}

/** A `ThreadFileError` about record `index`. */
export function recordError(index: number, what: string): ThreadFileError {
  return new ThreadFileError(`The langgraph-thread file is invalid: record ${index} ${what}.`);
}
