/**
 * The sync wire protocol, shared by the browser client (`SyncClient`) and the
 * Node server (`createSyncServer`). Pure types, constants and the body codec
 * (the bodies' checks are in protocol-checks.ts): nothing here touches
 * IndexedDB, the DOM or Node APIs, so the server imports it without pulling
 * browser code.
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
 * `GET /v1/threads?limit=L&after=A`: the user's threads in thread id order
 * (by UTF-16 code unit, as devices order ids), after `A`, at most `L` ({@link MAX_THREADS_PAGE});
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
    // The cause keeps msgpackr's `incomplete` flag: bytes that end early (a cut answer, transport.ts).
    throw new ProtocolError(`The body is not valid MessagePack: ${(error as Error).message}`, { cause: error });
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
