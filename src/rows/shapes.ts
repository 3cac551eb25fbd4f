/**
 * The saver's row shapes, as stored in IndexedDB and carried by the sync
 * protocol and the sync server's tables: ids, parent links, run ids and
 * channel versions as plain fields (they are keys or index keys, and the
 * history walk reads them inside one transaction); every value LangGraph
 * gives (checkpoint, metadata, channel values, pending writes) as
 * `[type, bytes]` from the serializer, so an encrypting serializer covers
 * all of them. Also the saver's own rows among them: tombstones and the
 * key-id copy. A frozen format: field names and these rows' keys are on
 * users' disks.
 */

/** A serialized value: the serializer's type tag and its bytes. */
export type TypedBytes = [type: string, data: Uint8Array];

/**
 * True for a serialized value as the saver stores it. A row edited outside
 * the saver may hold anything in its place (decoding says so: rows/codec.ts).
 */
export function isTypedBytes(value: unknown): value is TypedBytes {
  return Array.isArray(value) && typeof value[0] === "string" && value[1] instanceof Uint8Array;
}

/** A channel version as LangGraph hands it over. */
export type Version = string | number;

/** One checkpoint, without its channel values (those live in `blobs`). */
export interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  /** The checkpoint it was put on top of (`config.configurable.checkpoint_id`). */
  parent_checkpoint_id?: string;
  /**
   * Row binding version 3 (encrypting serializers only): a SHA-256 over this
   * row's id, parent link and channel versions and its parent's `chain`, 64
   * lowercase hex characters, also sealed with the checkpoint. Walks up the
   * parent chain check links by hashing instead of decrypting every
   * ancestor (see saver/chain.ts). Absent on binding version 1 and 2 rows.
   */
  chain?: string;
  /**
   * Row binding version 4 (encrypting serializers only, with `chain`): the
   * keys of the pending writes the parent checkpoint held when this row
   * was put (the writes the step that made it consumed), sorted, and hashed
   * into `chain`. Readers that rebuild state from an ancestor's writes
   * (the delta-channel walk) fail closed when one of them is missing (see
   * saver/chain.ts). Absent on rows of binding versions 1 to 3.
   */
  parent_writes?: WriteKey[];
  /** The checkpoint with `channel_values` removed. */
  checkpoint: TypedBytes;
  metadata: TypedBytes;
  /**
   * Versions of the channels that have a stored value at this checkpoint, a
   * plain copy so one read transaction can fetch the blobs (the authoritative
   * copy is inside `checkpoint`).
   */
  channel_versions: Record<string, Version>;
  /** `metadata.run_id`, indexed for `deleteForRuns`. */
  run_id?: string;
  /**
   * When this row was written (ms since the epoch), stamped in the
   * transaction that stores it: sync finds new checkpoints by it (schema
   * version 4, index `by_created`).
   */
  created_at: number;
  /**
   * Row format 2: the small values of the channel versions this checkpoint
   * introduced, by channel, each at this row's `channel_versions[channel]`
   * and sealed exactly as the blob row it replaces (same bytes, same row
   * binding), so it moves to `blobs` unchanged when the row goes.
   */
  inline?: Record<string, TypedBytes>;
  /** The blob keys of `inline` (`[thread, ns, channel, version]`), indexed multiEntry (`by_value`). */
  inline_keys?: ValueKey[];
  /**
   * Schema version 5: the blob keys (`[thread, ns, channel, version]`) of
   * channel versions in `channel_versions` known to have no stored value,
   * so a read asks neither `blobs` nor `by_value` for them. Indexed
   * multiEntry (`by_absent`): whatever later stores a value at a listed
   * version (prune's delta snapshot, a blob sync pulls) takes it off every
   * row listing it (saver/absent.ts). Rows without the field read every
   * version, as before; a key not naming this row's own thread, namespace
   * and version lists nothing.
   */
  absent_keys?: ValueKey[];
}

/** A pending write's key as a checkpoint row lists it: task id, idx, channel. */
export type WriteKey = [taskId: string, idx: number, channel: string];

/** One channel's value at one version. Versions without a value have no row. */
export interface BlobRow {
  thread_id: string;
  checkpoint_ns: string;
  channel: string;
  version: Version;
  value: TypedBytes;
}

/**
 * The value of `channel` at `version` that `row` holds inline, as the blob
 * row it stands for; undefined unless the row holds it at that version.
 */
export function inlineBlob(row: CheckpointRow, channel: string, version: Version): BlobRow | undefined {
  const value = row.inline && Object.hasOwn(row.inline, channel) ? row.inline[channel] : undefined;
  if (value === undefined || row.channel_versions?.[channel] !== version) return undefined;
  return { thread_id: row.thread_id, checkpoint_ns: row.checkpoint_ns, channel, version, value };
}

/** Every value `row` holds inline, as blob rows (what export, sync and deletes see). */
export function inlineBlobs(row: CheckpointRow): BlobRow[] {
  // A row edited outside the saver may hold anything here: a row without
  // channel versions holds no value at any (reading it says what is wrong).
  const versions: unknown = row.channel_versions;
  if (typeof versions !== "object" || versions === null || typeof row.inline !== "object" || row.inline === null) {
    return [];
  }
  return Object.keys(row.inline).flatMap((channel) =>
    Object.hasOwn(versions, channel) ? (inlineBlob(row, channel, row.channel_versions[channel]!) ?? []) : [],
  );
}

/**
 * The value of `channel` at `version` of thread `t`, namespace `ns`, from
 * the first of `holders` (the rows the `by_value` index gave for that key)
 * that holds it inline. The index is built from the clear `inline_keys`,
 * which anyone with the profile's files can edit: a row listing a key it
 * does not hold (or another thread's) must not hide the row that does.
 */
export function heldInline(
  holders: readonly CheckpointRow[],
  t: string,
  ns: string,
  channel: string,
  version: Version,
): BlobRow | undefined {
  for (const row of holders) {
    const blob = row.thread_id === t && row.checkpoint_ns === ns ? inlineBlob(row, channel, version) : undefined;
    if (blob) return blob;
  }
  return undefined;
}

/**
 * Whether `row` lists `channel` at `version` as having no stored value (see
 * `absent_keys`). The list is clear and editable: anything but a list of
 * keys lists nothing, so the value is asked for as before.
 */
export function isAbsent(row: CheckpointRow, channel: string, version: Version): boolean {
  if (row.channel_versions?.[channel] !== version) return false;
  return absentKeysOf(row).some((key) => key[2] === channel && key[3] === version);
}

/** A channel value's key: thread, namespace, channel, version (a blob row's, and the entries of `inline_keys` and `absent_keys`). */
export type ValueKey = [string, string, string, Version];

/**
 * The well-formed keys of `row.absent_keys` that name its own thread and
 * namespace; anything else in the clear, editable list is left out (a value
 * it leaves out is asked for, as on a row without the list).
 */
export function absentKeysOf(row: CheckpointRow): ValueKey[] {
  const list: unknown = row.absent_keys;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (key): key is ValueKey =>
      Array.isArray(key) &&
      key.length === 4 &&
      key[0] === row.thread_id &&
      key[1] === row.checkpoint_ns &&
      typeof key[2] === "string",
  );
}

/** One pending write of a task against a checkpoint. */
export interface WriteRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  /** Position in the task's write list, or the negative slot of a special channel. */
  idx: number;
  channel: string;
  value: TypedBytes;
  /** The task's path, for `writesSortKey` order ("" when not given). */
  task_path: string;
  /**
   * When the saver stored this write (ms since the epoch, stamped in its
   * transaction; schema version 4): sync finds new writes by it. Absent on
   * rows of older versions, pulled rows and the tombstone and key-id copies.
   */
  written_at?: number;
  /** Only on a thread's tombstone copy (see {@link tombstoneWrite}). */
  tombstone?: Tombstone;
  /** Only on the key-id copy (see {@link keyIdWrite}). */
  key_id?: string;
}

/** Marks a deleted thread so late writes of a run still in flight stay dropped. */
export interface Tombstone {
  /** Checkpoint ids up to this one (string order) belonged to the deleted thread. */
  max_deleted_id: string;
  /** Checkpoints a late `put` tried to add after the delete; their writes are dropped too. */
  dropped: string[];
  deleted_at: number;
}

/** True when a deleted thread must ignore writes aimed at `checkpointId` (`exists`: its row is there). */
export function isDeadCheckpoint(tombstone: Tombstone | undefined, checkpointId: string, exists: boolean): boolean {
  if (!tombstone || exists) return false;
  return checkpointId <= tombstone.max_deleted_id || tombstone.dropped.includes(checkpointId);
}

/**
 * Per-thread summary for `listThreads`, written blind (no read first) by
 * root-namespace puts, so a put costs one round trip; a put to the thread
 * first by update time may leave it as it is (saver/put-proof.ts). What
 * would need a read-modify-write (creation time, checkpoint count) is
 * derived when listing.
 */
export interface ThreadRow {
  thread_id: string;
  updated_at: number;
  /** The root checkpoint put last: its id and serialized metadata. */
  latest?: { checkpoint_ns: string; checkpoint_id: string; metadata: TypedBytes };
}

/** The summary row of a thread whose newest checkpoint is `latest`. */
export function threadSummary(
  threadId: string,
  updatedAt: number,
  latest: Pick<CheckpointRow, "checkpoint_ns" | "checkpoint_id" | "metadata">,
): ThreadRow {
  return {
    thread_id: threadId,
    updated_at: updatedAt,
    latest: { checkpoint_ns: latest.checkpoint_ns, checkpoint_id: latest.checkpoint_id, metadata: latest.metadata },
  };
}

/** What the `meta` record names of tombstones start with: the thread id follows. */
const TOMBSTONE_PREFIX = "tombstone\u0000";

/** The `meta` record name of a thread's tombstone (the copy `put` reads). */
export function tombstoneName(threadId: string): string {
  return `${TOMBSTONE_PREFIX}${threadId}`;
}

/** The thread whose tombstone the `meta` record `name` is (see {@link tombstoneName}). */
export function tombstoneThread(name: string): string {
  return name.slice(TOMBSTONE_PREFIX.length);
}

/** Bounds of every tombstone's `meta` record name: the prefix, up to the next code unit after its U+0000. */
export const TOMBSTONE_NAMES = { lower: TOMBSTONE_PREFIX, upper: "tombstone\u0001" } as const;

/**
 * The namespace of a thread's tombstone copy in the `writes` store. No real
 * namespace starts with U+0000, and it sorts before them all but the root's.
 */
export const TOMBSTONE_NS = "\u0000tombstone";

/**
 * The tombstone copy `putWrites` reads. A second copy in `writes` keeps
 * `putWrites` transactions to the `writes` store alone, so they never wait
 * for a `put` of the same run (IndexedDB runs read-write transactions with
 * disjoint stores side by side).
 */
export function tombstoneWrite(threadId: string, tombstone: Tombstone): WriteRow {
  return {
    thread_id: threadId,
    checkpoint_ns: TOMBSTONE_NS,
    checkpoint_id: "",
    task_id: "",
    idx: 0,
    channel: TOMBSTONE_NS,
    task_path: "",
    value: ["tombstone", new Uint8Array(0)],
    tombstone,
  };
}

/** The key of a thread's tombstone copy in `writes`. */
export function tombstoneWriteKey(threadId: string): [string, string, string, string, number] {
  return [threadId, TOMBSTONE_NS, "", "", 0];
}

/**
 * The copy of the database's current data key id that `putWrites` checks
 * in its own transaction (see {@link keyIdWrite}): in the tombstone
 * namespace under the empty thread id, which no thread has, so every reader
 * skips it as it skips tombstone copies.
 */
export const KEY_ID_WRITE_KEY: [string, string, string, string, number] = ["", TOMBSTONE_NS, "", "", 0];

/**
 * The key-id copy, written with every key record: like the tombstone copy,
 * it keeps `putWrites` on the `writes` store alone while it checks that the
 * key its values were sealed under is still the database's.
 */
export function keyIdWrite(keyId: string): WriteRow {
  const [thread_id, checkpoint_ns, checkpoint_id, task_id, idx] = KEY_ID_WRITE_KEY;
  const value: TypedBytes = ["key", new Uint8Array(0)];
  return {
    thread_id,
    checkpoint_ns,
    checkpoint_id,
    task_id,
    idx,
    channel: checkpoint_ns,
    task_path: "",
    value,
    key_id: keyId,
  };
}

/** True for a tombstone copy or the key-id copy, which thread-wide reads of `writes` skip. */
export function isTombstoneWrite(row: WriteRow): boolean {
  return row.checkpoint_ns === TOMBSTONE_NS;
}

/** A small named record: format version, the serializer's key record, tombstones. */
export interface MetaRow {
  name: string;
  value: unknown;
}
