/**
 * The checks of the sync protocol's bodies (protocol.ts has their types, the
 * codec and the constants): each `parse*` takes a decoded body and returns it
 * typed, or throws a {@link ProtocolError} saying what is wrong. The server
 * applies them to every request, the client to every answer, by the same
 * rules: ids, sizes, `[type, bytes]` values, finite versions, chains.
 */
import { idDefect } from "../rows/ids.js";
import {
  ProtocolError,
  SYNC_PROTOCOL_VERSION,
  type KeyRequest,
  type PullResponse,
  type PushRequest,
  type ThreadsResponse,
  type WireBytes,
  type WireChange,
  type WireCheckpoint,
  type WireDelete,
  type WireRemoved,
  type WireThread,
  type WireVersion,
} from "./protocol.js";

/** Longest id (thread, namespace, checkpoint, task, channel) accepted. */
const MAX_ID_LENGTH = 1024;

/** Names that must not become object keys anywhere. */
const FORBIDDEN_IDS = new Set(["__proto__", "constructor", "prototype"]);

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function id(value: unknown, where: string, allowEmpty = false): string {
  if (typeof value !== "string") throw new ProtocolError(`${where} must be a string.`);
  if (!allowEmpty && value.length === 0) throw new ProtocolError(`${where} must not be empty.`);
  if (value.length > MAX_ID_LENGTH) throw new ProtocolError(`${where} is longer than ${MAX_ID_LENGTH} characters.`);
  if (FORBIDDEN_IDS.has(value)) throw new ProtocolError(`${where} must not be "${value}".`);
  const defect = idDefect(value);
  if (defect !== undefined) throw new ProtocolError(`${where} ${defect}.`);
  return value;
}

/**
 * A checkpoint namespace: namespaces starting with U+0000 hold the saver's
 * own rows (tombstones, the key-id copy), which no saver lets a caller use:
 * a bundle there could only overwrite them.
 */
function namespace(value: unknown, where: string): string {
  if (typeof value === "string" && value.startsWith("\u0000"))
    throw new ProtocolError(`${where} must not start with "\\u0000" (reserved).`);
  return id(value, where, true);
}

function bytes(value: unknown, where: string): WireBytes {
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    typeof value[0] !== "string" ||
    !(value[1] instanceof Uint8Array)
  ) {
    throw new ProtocolError(`${where} must be [type: string, data: bytes].`);
  }
  if (value[0].length > MAX_ID_LENGTH) throw new ProtocolError(`${where}: type tag too long.`);
  const defect = idDefect(value[0]);
  if (defect !== undefined) throw new ProtocolError(`${where}: type tag ${defect}.`);
  return [value[0], value[1]];
}

function version(value: unknown, where: string): WireVersion {
  if (typeof value === "string" && value.length <= MAX_ID_LENGTH) return value;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  throw new ProtocolError(`${where} must be a finite number or a string.`);
}

/** A row's `chain`: exactly what the saver writes (a SHA-256 as lowercase hex), nothing a row could not hold. */
function chain(value: unknown, where: string): string {
  if (typeof value !== "string" || !/^[0-9a-f]{64}$/.test(value))
    throw new ProtocolError(`${where} must be 64 lowercase hex characters.`);
  return value;
}

/** A row's `parent_writes`: write keys as the saver writes them (ids and safe integers), nothing else. */
function writeKeys(value: unknown, where: string): [string, number, string][] {
  return list(value, where).map((entry, i) => {
    const w = `${where}[${i}]`;
    if (!Array.isArray(entry) || entry.length !== 3) throw new ProtocolError(`${w} must be [task_id, idx, channel].`);
    if (!Number.isSafeInteger(entry[1])) throw new ProtocolError(`${w}[1] must be an integer.`);
    return [id(entry[0], `${w}[0]`), entry[1] as number, id(entry[2], `${w}[2]`)];
  });
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) throw new ProtocolError(`${where} must be an array.`);
  return value;
}

/** Checks one checkpoint bundle and returns it typed. */
export function parseCheckpoint(value: unknown, where = "checkpoint"): WireCheckpoint {
  if (!isObject(value)) throw new ProtocolError(`${where} must be an object.`);
  const versions = value.channel_versions;
  if (!isObject(versions)) throw new ProtocolError(`${where}.channel_versions must be an object.`);
  const channelVersions: Record<string, WireVersion> = {};
  for (const [channel, v] of Object.entries(versions)) {
    channelVersions[id(channel, `${where}.channel_versions key`)] = version(v, `${where}.channel_versions.${channel}`);
  }
  const result: WireCheckpoint = {
    thread_id: id(value.thread_id, `${where}.thread_id`),
    checkpoint_ns: namespace(value.checkpoint_ns, `${where}.checkpoint_ns`),
    checkpoint_id: id(value.checkpoint_id, `${where}.checkpoint_id`),
    checkpoint: bytes(value.checkpoint, `${where}.checkpoint`),
    metadata: bytes(value.metadata, `${where}.metadata`),
    channel_versions: channelVersions,
    blobs: list(value.blobs, `${where}.blobs`).map((blob, i) => {
      const w = `${where}.blobs[${i}]`;
      if (!isObject(blob)) throw new ProtocolError(`${w} must be an object.`);
      return {
        channel: id(blob.channel, `${w}.channel`),
        version: version(blob.version, `${w}.version`),
        value: bytes(blob.value, `${w}.value`),
      };
    }),
    writes: list(value.writes, `${where}.writes`).map((write, i) => {
      const w = `${where}.writes[${i}]`;
      if (!isObject(write)) throw new ProtocolError(`${w} must be an object.`);
      // The server keeps idx in an integer column (as LangGraph's PostgreSQL saver does).
      if (!Number.isSafeInteger(write.idx) || (write.idx as number) < -(2 ** 31) || (write.idx as number) >= 2 ** 31)
        throw new ProtocolError(`${w}.idx must be an integer from -2147483648 to 2147483647.`);
      if (typeof write.task_path !== "string" || write.task_path.length > MAX_ID_LENGTH)
        throw new ProtocolError(`${w}.task_path must be a string.`);
      const pathDefect = idDefect(write.task_path);
      if (pathDefect !== undefined) throw new ProtocolError(`${w}.task_path ${pathDefect}.`);
      return {
        task_id: id(write.task_id, `${w}.task_id`),
        idx: write.idx as number,
        channel: id(write.channel, `${w}.channel`),
        task_path: write.task_path,
        value: bytes(write.value, `${w}.value`),
      };
    }),
  };
  if (value.parent_checkpoint_id !== undefined && value.parent_checkpoint_id !== null) {
    result.parent_checkpoint_id = id(value.parent_checkpoint_id, `${where}.parent_checkpoint_id`);
  }
  if (value.chain !== undefined && value.chain !== null) result.chain = chain(value.chain, `${where}.chain`);
  if (value.parent_writes !== undefined && value.parent_writes !== null)
    result.parent_writes = writeKeys(value.parent_writes, `${where}.parent_writes`);
  if (value.run_id !== undefined && value.run_id !== null) result.run_id = id(value.run_id, `${where}.run_id`);
  return result;
}

/** Checks one delete and returns it typed. */
export function parseDelete(value: unknown, where = "delete"): WireDelete {
  if (!isObject(value)) throw new ProtocolError(`${where} must be an object.`);
  return {
    thread_id: id(value.thread_id, `${where}.thread_id`),
    max_deleted_id: id(value.max_deleted_id, `${where}.max_deleted_id`),
  };
}

/** Checks one removal and returns it typed. */
export function parseRemoved(value: unknown, where = "removed"): WireRemoved {
  if (!isObject(value)) throw new ProtocolError(`${where} must be an object.`);
  return {
    thread_id: id(value.thread_id, `${where}.thread_id`),
    checkpoint_ns: namespace(value.checkpoint_ns, `${where}.checkpoint_ns`),
    checkpoint_id: id(value.checkpoint_id, `${where}.checkpoint_id`),
  };
}

function checkVersion(value: Obj): void {
  if (value.v !== SYNC_PROTOCOL_VERSION) {
    throw new ProtocolError(
      `Unsupported protocol version ${JSON.stringify(value.v)}: this server speaks version ${SYNC_PROTOCOL_VERSION}.`,
    );
  }
}

/** Checks a push body. */
export function parsePushRequest(value: unknown): PushRequest {
  if (!isObject(value)) throw new ProtocolError("The push body must be an object.");
  checkVersion(value);
  const request: PushRequest = {
    v: SYNC_PROTOCOL_VERSION,
    checkpoints: list(value.checkpoints, "checkpoints").map((c, i) => parseCheckpoint(c, `checkpoints[${i}]`)),
    deletes: list(value.deletes, "deletes").map((d, i) => parseDelete(d, `deletes[${i}]`)),
  };
  if (value.device !== undefined) request.device = id(value.device, "device");
  if (value.removed !== undefined)
    request.removed = list(value.removed, "removed").map((r, i) => parseRemoved(r, `removed[${i}]`));
  return request;
}

/**
 * Checks a pull answer on the client: the server is trusted for
 * availability only, so its rows get the checks a push gets on the server
 * before any of them is written.
 */
export function parsePullResponse(value: unknown): PullResponse {
  if (!isObject(value)) throw new ProtocolError("The pull answer must be an object.");
  checkVersion(value);
  if (!Number.isSafeInteger(value.cursor) || typeof value.more !== "boolean")
    throw new ProtocolError("The pull answer needs an integer cursor and a boolean more.");
  const changes = list(value.changes, "changes").map((change, i): WireChange => {
    const where = `changes[${i}]`;
    if (!isObject(change) || !Number.isSafeInteger(change.seq))
      throw new ProtocolError(`${where} needs an integer seq.`);
    const seq = change.seq as number;
    if (change.kind === "checkpoint")
      return { kind: "checkpoint", seq, checkpoint: parseCheckpoint(change.checkpoint, `${where}.checkpoint`) };
    if (change.kind === "delete") return { kind: "delete", seq, delete: parseDelete(change.delete, `${where}.delete`) };
    if (change.kind === "removed")
      return { kind: "removed", seq, removed: parseRemoved(change.removed, `${where}.removed`) };
    throw new ProtocolError(`${where}.kind must be "checkpoint", "delete" or "removed".`);
  });
  return { v: SYNC_PROTOCOL_VERSION, changes, cursor: value.cursor as number, more: value.more };
}

/**
 * A device id in a pull's query (`device`): as a push's body's is checked,
 * one bound for both, so a device whose id a push took can always pull.
 */
export function deviceIdParam(value: unknown): string {
  if (typeof value !== "string") throw new ProtocolError('Query parameter "device" must be a device id.');
  return id(value, 'Query parameter "device"');
}

/** A thread id in a query parameter (`thread`, `after`): as a body's thread id is checked. */
export function threadIdParam(value: unknown, name: string): string {
  if (typeof value !== "string") throw new ProtocolError(`Query parameter "${name}" must be a thread id.`);
  return id(value, `Query parameter "${name}"`);
}

/**
 * Checks a page of `GET /v1/threads` on the client: each thread's fields,
 * and a `next` that is the page's last thread id (so paging moves on and
 * ends), or none.
 */
export function parseThreadsResponse(value: unknown): ThreadsResponse {
  if (!isObject(value)) throw new ProtocolError("The threads answer must be an object.");
  checkVersion(value);
  const threads = list(value.threads, "threads").map((thread, i): WireThread => {
    const where = `threads[${i}]`;
    if (!isObject(thread)) throw new ProtocolError(`${where} must be an object.`);
    if (!Number.isSafeInteger(thread.checkpoints) || !Number.isSafeInteger(thread.seq))
      throw new ProtocolError(`${where} needs integer checkpoints and seq.`);
    return {
      thread_id: id(thread.thread_id, `${where}.thread_id`),
      checkpoints: thread.checkpoints as number,
      latest_checkpoint_id: id(thread.latest_checkpoint_id, `${where}.latest_checkpoint_id`, true),
      seq: thread.seq as number,
    };
  });
  const response: ThreadsResponse = { v: SYNC_PROTOCOL_VERSION, threads };
  if (value.next !== undefined && value.next !== null) {
    if (threads.length === 0 || value.next !== threads[threads.length - 1]!.thread_id)
      throw new ProtocolError("The threads answer's next must be its last thread id.");
    response.next = value.next;
  }
  return response;
}

/** Checks a key body. */
export function parseKeyRequest(value: unknown): KeyRequest {
  if (!isObject(value)) throw new ProtocolError("The key body must be an object.");
  checkVersion(value);
  if (!(value.keyRecord instanceof Uint8Array) || value.keyRecord.length === 0)
    throw new ProtocolError("keyRecord must be non-empty bytes.");
  return { v: SYNC_PROTOCOL_VERSION, keyRecord: value.keyRecord };
}
