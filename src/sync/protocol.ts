/**
 * The sync wire protocol, shared by the browser client (`SyncClient`) and the
 * Node server (`createSyncServer`). Pure types, constants, the body codec and
 * validators: nothing here touches IndexedDB, the DOM or Node APIs, so the
 * server imports it without pulling browser code.
 *
 * The unit of replication is one checkpoint with the channel values it
 * references and its pending writes, as the browser saver stores them: every
 * value is the serializer's `[type, bytes]`, shipped verbatim (ciphertext for
 * an encrypted saver). Bodies are MessagePack (binary values travel as bytes,
 * channel versions keep their number or string type). See docs/sync.md.
 */
import { Packr } from "msgpackr";
import { refusedAt, type DecodeLimits } from "../core/msgpack-guard.js";
import { idDefect } from "../rows/ids.js";
import type { TypedBytes, Version } from "../rows/shapes.js";

/** Version of the protocol; every body carries it as `v`. */
export const SYNC_PROTOCOL_VERSION = 1;

/** Media type of every request and response body (errors are JSON). */
export const SYNC_MEDIA_TYPE = "application/vnd.langgraph-sync+msgpack";

/** Route prefix. */
export const SYNC_PATH = "/v1";

/** Default largest request body the server accepts (bytes). */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Largest number of changes one pull returns. */
export const MAX_PULL_LIMIT = 1000;

/**
 * Longest a pull may wait for a change (`wait`, in seconds) when there is
 * none yet: a long poll, woken by any server process's push of the user.
 */
export const MAX_PULL_WAIT_SECONDS = 30;

/** Most threads one page of `GET /v1/threads` lists (`limit`, which is also its default once paging). */
export const MAX_THREADS_PAGE = 1000;

/**
 * Most threads `GET /v1/threads` lists without `limit` or `after` (clients
 * that predate pages): the whole list up to this many, 413
 * `too_many_threads` beyond.
 */
export const MAX_THREADS_UNPAGED = 10_000;

/** A serialized value as the saver stores it: the serializer's type tag and its bytes. */
export type WireBytes = TypedBytes;

/** A channel version, number or string as LangGraph made it (and the saver stores it). */
export type WireVersion = Version;

/** One channel value at one version. */
export interface WireBlob {
  channel: string;
  version: WireVersion;
  value: WireBytes;
}

/** One pending write of a task against the checkpoint. */
export interface WireWrite {
  task_id: string;
  /** Position in the task's writes, or the negative slot of a special channel (those replace). */
  idx: number;
  channel: string;
  task_path: string;
  value: WireBytes;
}

/** One checkpoint with the blobs its `channel_versions` reference and its pending writes. */
export interface WireCheckpoint {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id?: string;
  /**
   * The row's `chain` (row binding version 3, encrypting savers): 64
   * lowercase hex characters, carried verbatim both ways, since the
   * checkpoint's ciphertext is sealed with it and opens only beside the same
   * value. Absent on older (binding version 1 and 2) and plaintext rows.
   */
  chain?: string;
  /**
   * The row's `parent_writes` (row binding version 4, with `chain`): the
   * keys (task id, idx, channel) of the parent's pending writes hashed into
   * the chain, carried verbatim both ways for the same reason. Absent on
   * rows of binding versions 1 to 3.
   */
  parent_writes?: [taskId: string, idx: number, channel: string][];
  /** The checkpoint without channel values. */
  checkpoint: WireBytes;
  metadata: WireBytes;
  channel_versions: Record<string, WireVersion>;
  run_id?: string;
  blobs: WireBlob[];
  writes: WireWrite[];
}

/** A thread deleted: every checkpoint up to `max_deleted_id` (string order) is gone. */
export interface WireDelete {
  thread_id: string;
  max_deleted_id: string;
}

/**
 * One checkpoint removed by `prune` or `deleteForRuns` (runOnThread's
 * rollback) on some device: with its pending writes, it is gone on every
 * device and the server, and no push brings it back.
 */
export interface WireRemoved {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
}

/** `POST /v1/push`: checkpoints and deletes the server may lack. Deletes apply first. */
export interface PushRequest {
  v: typeof SYNC_PROTOCOL_VERSION;
  /** The pushing device's id (random, per database): its own pulls skip what it pushed. */
  device?: string;
  checkpoints: WireCheckpoint[];
  deletes: WireDelete[];
  /** Checkpoints removed, applied with the deletes (before any checkpoint); servers that predate them ignore it. */
  removed?: WireRemoved[];
}

/** What a push changed. */
export interface PushResponse {
  v: typeof SYNC_PROTOCOL_VERSION;
  /** Checkpoints that were new or gained writes. */
  changed: number;
  /** Checkpoints dropped because their thread was deleted after them. */
  dropped: number;
  /** The user's change sequence after the push. */
  seq: number;
  /** Removals applied or already known; absent from servers that predate them (the device then sends them again). */
  removed?: number;
}

/** One entry of the change log, in sequence order. */
export type WireChange =
  | { kind: "checkpoint"; seq: number; checkpoint: WireCheckpoint }
  | { kind: "delete"; seq: number; delete: WireDelete }
  | { kind: "removed"; seq: number; removed: WireRemoved };

/**
 * `GET /v1/pull?since=N&limit=M[&thread=T][&device=D][&wait=S][&removed=1]`:
 * changes after `since`; with `device`, the changes that device pushed
 * itself are skipped (the cursor still moves past them); with `wait`, a pull
 * that finds nothing new waits up to S seconds ({@link MAX_PULL_WAIT_SECONDS}
 * at most) for a push and answers with it; with `removed=1`, removals come
 * too (`kind: "removed"`: clients that predate them would refuse the kind).
 */
export interface PullResponse {
  v: typeof SYNC_PROTOCOL_VERSION;
  changes: WireChange[];
  /** Pass as `since` next time. */
  cursor: number;
  /** True when more changes follow `cursor`. */
  more: boolean;
}

/** `GET /v1/hello`: who the token belongs to, and the user's key record. */
export interface HelloResponse {
  v: typeof SYNC_PROTOCOL_VERSION;
  user: string;
  /** The user's encryption key record (MessagePack of the saver's record), or null: plaintext user. */
  keyRecord: Uint8Array | null;
  /** Whether the user has any checkpoint on the server. */
  hasData: boolean;
  seq: number;
  /**
   * The app the request named (`?app=`), echoed; absent from servers that
   * predate apps (which serve every app of a user from one space) and when
   * the request named none.
   */
  app?: string;
  /**
   * With `app`: true when the app answers from the user's own space, the one
   * requests naming no app share (the first app of the user to name itself
   * claims it, with whatever the server held before apps); false when it has
   * a space of its own.
   */
  unscoped?: boolean;
}

/** `PUT /v1/key`: offers a key record; the first one stored wins. */
export interface KeyRequest {
  v: typeof SYNC_PROTOCOL_VERSION;
  keyRecord: Uint8Array;
}

/** The stored key record after `PUT /v1/key` (the offered one, or the one that was there). */
export interface KeyResponse {
  v: typeof SYNC_PROTOCOL_VERSION;
  keyRecord: Uint8Array;
}

/** One thread as `GET /v1/threads` lists it. */
export interface WireThread {
  thread_id: string;
  /** Checkpoints the server holds of it, in every namespace. */
  checkpoints: number;
  /** Its newest root checkpoint id ("" when it has only subgraph checkpoints). */
  latest_checkpoint_id: string;
  /** The sequence number of its latest change. */
  seq: number;
}

/**
 * `GET /v1/threads?limit=L&after=A`: the user's threads in the server's
 * order of thread ids, after `A`, at most `L` ({@link MAX_THREADS_PAGE});
 * `next`, when more follow, is the `after` of the next page. Without
 * `limit` and `after`: every thread (no `next`), or 413 `too_many_threads`
 * past {@link MAX_THREADS_UNPAGED}.
 */
export interface ThreadsResponse {
  v: typeof SYNC_PROTOCOL_VERSION;
  threads: WireThread[];
  /** Where the next page starts (`after`); absent on the last page (and from servers that predate pages). */
  next?: string;
}

/** The JSON body of every error response. */
export interface ErrorBody {
  error: { code: string; message: string };
}

// ------------------------------------------------------------------ codec

/**
 * Plain MessagePack: no records, no extensions (the package's own msgpack
 * extensions are for state values, which travel as opaque bytes here).
 * msgpackr would still read its own built-in extensions (structured-clone
 * references, records, Error, Set, RegExp…) from crafted bytes, so a body
 * naming any extension is refused before it is decoded (see
 * core/msgpack-guard.ts).
 */
const packr = new Packr({
  useRecords: false,
  moreTypes: false,
  structuredClone: false,
  mapsAsObjects: true,
  variableMapSize: true,
});

/** Every extension type refused (REFUSED is 0). */
const NO_EXTENSIONS = new Uint8Array(256);

/** Encodes a body. */
export function encodeBody(body: unknown): Uint8Array {
  return packr.pack(body);
}

/**
 * How much one body may declare, whichever side reads it. Far above what the
 * protocol needs (a push holds 64 checkpoints by default, each with tens of
 * values), and low enough that decoding the worst body allowed takes about
 * a tenth of a second: without them a 16 MiB map of 2.4 M short keys held
 * the event loop for 8 s.
 */
export const SYNC_DECODE_LIMITS: DecodeLimits = { maxValues: 1_000_000, maxContainer: 50_000, maxDepth: 32 };

/** Decodes a body; throws {@link ProtocolError} on bytes that are not MessagePack or declare more than `limits`. */
export function decodeBody(bytes: Uint8Array, limits: DecodeLimits = SYNC_DECODE_LIMITS): unknown {
  const refused = refusedAt(bytes, NO_EXTENSIONS, limits);
  if (refused >= 0) {
    throw new ProtocolError(
      `The body is not plain MessagePack within the protocol's limits (${limits.maxValues} values, ` +
        `${limits.maxContainer} per map or array, ${limits.maxDepth} levels): ` +
        `an extension, a reserved byte or a container past them at offset ${refused}.`,
    );
  }
  try {
    return packr.unpack(bytes);
  } catch (error) {
    throw new ProtocolError(`The body is not valid MessagePack: ${(error as Error).message}`);
  }
}

// ------------------------------------------------------------------ validation

/** Longest app name (`?app=`) accepted. */
export const MAX_APP_LENGTH = 128;

/**
 * Checks an app name, the scope of replication (`?app=` on every route):
 * 1 to {@link MAX_APP_LENGTH} characters, no control characters, no lone
 * surrogates, so it round-trips through a URL and PostgreSQL exactly.
 */
export function parseApp(value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_APP_LENGTH)
    throw new ProtocolError(`The app name must be a string of 1 to ${MAX_APP_LENGTH} characters.`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value) || idDefect(value) !== undefined)
    throw new ProtocolError(`The app name ${JSON.stringify(value)} holds a control character or a lone surrogate.`);
  return value;
}

/** A body that does not follow the protocol. The server answers 400 with its message. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

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
