/**
 * One sync round: agree on the encryption key record, push what the server
 * lacks (deletes first, then checkpoints parent first, in bounded batches,
 * each one server transaction), then pull every change after the cursor
 * (each batch one IndexedDB transaction with the new cursor). Every step is
 * idempotent, so a round cut off anywhere is finished by the next one.
 */
import { isDatabaseKeyed, type KeyRecord } from "../serde/protocol.js";
import { sameClone } from "../core/equality.js";
import { checkpointIdentity } from "../core/identity.js";
import type { SaverRawAccess } from "../saver/raw-access.js";
import { ProtocolError, decodeBody, encodeBody, type HelloResponse } from "./protocol.js";
import { parseCheckpoint, parseDelete, parseRemoved } from "./protocol-checks.js";
import { applyChanges } from "./pull.js";
import {
  checkpointKeyOf,
  localInventory,
  readCheckpoints,
  readThread,
  withoutExchanged,
  type LocalCheckpoint,
} from "./push.js";
import {
  SCAN_SLACK_MS,
  changedSince,
  readScan,
  recordScan,
  revaluedCheckpoints,
  withRevalued,
  type CheckpointKey,
  type Replayed,
} from "./changes.js";
import { sendPending, skippedThread, type PendingChanges, type SkippedThread } from "./send.js";
import { deviceId, forgetScope, lastScope, readSyncState, rememberUser } from "./state.js";
import { SyncError, type SyncTransport } from "./transport.js";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";

/** What one round did. */
export interface SyncResult {
  /** Checkpoints sent (new to the server, with new writes, or given a snapshot by prune). */
  pushed: number;
  /** Deletes sent. */
  pushedDeletes: number;
  /** Changes received and applied (checkpoints and deletes). */
  pulled: number;
  /** Threads that changed on either side. */
  threads: number;
  /**
   * Local checkpoints read to find what to push: those stamped since the
   * last round (and threads it could not send), or every one on a round
   * that scans everything (the first).
   */
  scanned: number;
  /**
   * Threads not pushed in this round, each with the reason: ids the protocol
   * refuses (stored before the saver refused them), or rows the server
   * refused. The other threads synced; these stay local.
   */
  skipped: SkippedThread[];
}

/** Progress inside a round, for a status line. */
export interface SyncProgress {
  phase: "push" | "pull";
  /** Local changes not yet on the server. */
  pending: number;
  /** Threads with something to push or pulled in this round. */
  threads: number;
  pushed: number;
  pulled: number;
}

/** What a round needs. */
export interface RoundContext {
  access: SaverRawAccess;
  /** The saver's serializer and a way to bind it (creates its key record). */
  serde: SerializerProtocol;
  unlock: () => Promise<void>;
  transport: SyncTransport;
  /** Base URL, part of the state scope. */
  url: string;
  /** Push only these threads (pull is always complete). */
  threadIds?: string[];
  /** Checkpoints per push request. */
  batchSize: number;
  /** Bytes of values per push request (beyond its first checkpoint). */
  batchBytes: number;
  /** Changes per pull request. */
  pullLimit: number;
  onProgress: (progress: SyncProgress) => void;
}

/**
 * Brings the device's key record and the server's to the same record:
 * the first encrypted device uploads its record, a later one adopts it
 * before writing anything. A plaintext saver refuses an encrypted user.
 */
async function agreeOnKey(ctx: RoundContext, serverRecord: Uint8Array | null, hasData: boolean): Promise<void> {
  const serde = ctx.serde;
  if (!isDatabaseKeyed(serde)) {
    if (serverRecord) {
      throw new SyncError(
        "This user's threads on the sync server are encrypted: open the saver with an EncryptedSerializer (same passphrase) to sync them.",
        { status: 0, code: "encrypted_user", retryable: false },
      );
    }
    return;
  }
  let local = await ctx.access.readKeyRecord();
  if (serverRecord) {
    let remote: KeyRecord;
    try {
      remote = decodeBody(serverRecord) as KeyRecord;
      // Adopted only if this saver's key opens it: a record from a hostile
      // server (or a man-in-the-middle) must not lock the database for good.
      if (local === undefined) await serde.forDatabase(remote);
    } catch (error) {
      throw new SyncError(
        `The sync server's key record does not open with this saver's passphrase or key, or is malformed (${(error as Error)?.message}). Nothing was stored.`,
        { status: 0, code: "key_mismatch", retryable: false, cause: error },
      );
    }
    if (local === undefined) local = await ctx.access.adoptKeyRecord(remote);
    if (!sameClone(local, remote)) {
      throw new SyncError(
        "This browser's database is encrypted under another data key than the synced one (it was written before its first sync). Sync a fresh database (a new dbName) on this device, or export its threads and import them after syncing.",
        { status: 0, code: "key_mismatch", retryable: false },
      );
    }
    return;
  }
  if (hasData) {
    throw new SyncError(
      "This user's threads on the sync server are not encrypted: an encrypted saver cannot join them.",
      { status: 0, code: "plaintext_user", retryable: false },
    );
  }
  if (local === undefined) {
    await ctx.unlock(); // binding a keyed serializer creates the record
    local = await ctx.access.readKeyRecord();
    if (local === undefined) throw new Error("The encrypted saver did not create a key record.");
  }
  const stored = (await ctx.transport.putKey(encodeBody(local))).keyRecord;
  if (!sameClone(decodeBody(stored), local)) {
    throw new SyncError(
      "Another device registered a different key record first; sync again on a fresh database to adopt it.",
      { status: 0, code: "key_mismatch", retryable: false },
    );
  }
}

/** What a round finds to push, and what it records at its end (changes.ts). */
export interface RoundChanges extends PendingChanges {
  /** `Date.now()` before anything was read: the next round's `since`. */
  started: number;
  /** The replayed entries read (they leave the list at the round's end). */
  replayed: Replayed;
  /** Checkpoints read to find what changed (the round's cost). */
  read: number;
  /** Whether the round scanned every thread (no usable scan record). */
  full: boolean;
  /** The revalued marks read (checkpoint key to time): what the round's fingerprints name. */
  revalued: ReadonlyMap<string, number>;
}

/**
 * Finds what the server lacks, from the local rows and the sync state: the
 * rows stamped since the last round's scan (and the threads it left to read
 * again), or every thread when there is no usable record (changes.ts).
 */
export async function pendingChanges(
  access: SaverRawAccess,
  scope: string,
  threadIds?: string[],
): Promise<RoundChanges> {
  const started = Date.now();
  const { scan, replayed } = await readScan(access, scope, threadIds);
  // A clock set back past the recorded time cannot be trusted to stamp later rows later.
  const full = scan === undefined || started < scan.since;
  const wanted = threadIds ? new Set(threadIds) : undefined;
  const [inventory, changedKeys, revalued] = await Promise.all([
    localInventory(access, { threads: full }),
    full ? [] : changedSince(access, scan.since - SCAN_SLACK_MS),
    revaluedCheckpoints(access),
  ]);
  // Checkpoints prune gave a value: their fingerprint names the mark, so each goes again once, with it.
  const marks = new Map(revalued.map(([threadId, ns, id, at]) => [checkpointKeyOf(threadId, ns, id), at]));
  const fingerprintOf = (local: LocalCheckpoint) => withRevalued(local.fingerprint, marks.get(local.key));
  const locals: LocalCheckpoint[] = [];
  // Appended one by one, not push(...read): a spread of some 125,000 checkpoints (a long thread, or a round
  // after many offline changes) overflows V8's stack, and every round would fail the same way.
  const append = (read: readonly LocalCheckpoint[]) => {
    for (const local of read) locals.push(local);
  };
  if (full) {
    for (const threadId of inventory.threads)
      if (!wanted || wanted.has(threadId)) append(await readThread(access, threadId));
  } else {
    const whole = new Set([...scan.retry, ...Object.keys(replayed)].filter((id) => !wanted || wanted.has(id)));
    for (const threadId of whole) append(await readThread(access, threadId));
    const since = scan.since - SCAN_SLACK_MS;
    const marked = revalued.filter(([, , , at]) => !(at < since)).map(([t, ns, id]): CheckpointKey => [t, ns, id]);
    const keys = [...new Map([...changedKeys, ...marked].map((key) => [checkpointKeyOf(...key), key])).values()].filter(
      ([threadId]) => !whole.has(threadId) && (!wanted || wanted.has(threadId)),
    );
    append(await readCheckpoints(access, keys));
  }
  const threadsRead = new Set(locals.map((local) => local.wire.thread_id));
  const state = await readSyncState(
    access,
    scope,
    full ? undefined : [...threadsRead, ...inventory.tombstones.keys(), ...inventory.removed.map((r) => r.thread_id)],
  );
  const result: RoundChanges = {
    deletes: [],
    removed: [],
    checkpoints: [],
    fps: new Map(),
    skipped: [],
    revaluedThreads: new Set(),
    started,
    replayed,
    read: locals.length,
    full,
    revalued: marks,
  };
  // Checked by the rules the server applies: a thread it would refuse is skipped, named, not sent.
  const refused = (threadId: string, check: () => unknown): boolean => {
    try {
      check();
      return false;
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      const reason = `Thread ${JSON.stringify(threadId)} cannot be synced: ${error.message}`;
      if (!result.skipped.some((s) => s.threadId === threadId))
        result.skipped.push(skippedThread(threadId, "invalid_id", reason));
      return true;
    }
  };
  for (const [threadId, max] of inventory.tombstones) {
    if (wanted && !wanted.has(threadId)) continue;
    const known = state.threads.get(threadId)?.tomb;
    const wire = { thread_id: threadId, max_deleted_id: max };
    if ((known === undefined || max > known) && !refused(threadId, () => parseDelete(wire))) result.deletes.push(wire);
  }
  // Every removal the server has not acknowledged, whether or not it is known to hold the
  // checkpoint: a push whose answer was cut may have stored it all the same.
  for (const removed of inventory.removed) {
    if (wanted && !wanted.has(removed.thread_id)) continue;
    const record = state.threads.get(removed.thread_id);
    if (record?.tomb !== undefined && removed.checkpoint_id <= record.tomb) continue; // the delete covers it
    if (record?.removed?.includes(checkpointIdentity(removed.checkpoint_ns, removed.checkpoint_id))) continue;
    if (!refused(removed.thread_id, () => parseRemoved(removed))) result.removed.push(removed);
  }
  const byThread = new Map<string, LocalCheckpoint[]>();
  for (const local of locals) {
    const list = byThread.get(local.wire.thread_id);
    if (list) list.push(local);
    else byThread.set(local.wire.thread_id, [local]);
  }
  for (const [threadId, read] of byThread) {
    const record = state.threads.get(threadId);
    const known = record?.fps ?? {};
    const changed = read.filter(
      (local) => known[checkpointIdentity(local.wire.checkpoint_ns, local.wire.checkpoint_id)] !== fingerprintOf(local),
    );
    if (changed.some((local) => refused(threadId, () => parseCheckpoint(local.wire)))) continue;
    for (const local of changed) {
      const identity = checkpointIdentity(local.wire.checkpoint_ns, local.wire.checkpoint_id);
      // Values exchanged stay home only while the server is known to hold the checkpoint: one that lost
      // it (forgetScope keeps the digests, drops the fingerprints) gets its special writes again.
      const seen = known[identity] === undefined ? undefined : record?.seen?.[identity];
      const wire = withoutExchanged(local.wire, seen);
      result.checkpoints.push(wire);
      if (marks.has(local.key)) result.revaluedThreads.add(threadId);
      result.fps.set(wire, fingerprintOf(local));
    }
  }
  return result;
}

/**
 * Which of the server's spaces the round talks to, as the sync state names
 * it: the user's own space keeps the name it had before apps (so a device
 * that synced then keeps its cursor), an app's own space is
 * `<user>\u001f<app>`. A server that predates apps echoes none and serves the
 * user's own space.
 */
export function spaceOf(hello: HelloResponse, app: string | undefined): string {
  if (hello.app === undefined) return hello.user;
  if (hello.app !== app || typeof hello.unscoped !== "boolean")
    throw new SyncError(
      `Sync server's answer to GET /hello breaks the protocol: it names app ${JSON.stringify(hello.app)}, ` +
        `this device asked for ${JSON.stringify(app)}.`,
      { status: 200, code: "bad_response", retryable: false },
    );
  return hello.unscoped ? hello.user : `${hello.user}\u001f${app}`;
}

/** Runs one round. */
export async function syncRound(ctx: RoundContext): Promise<SyncResult> {
  const hello = await ctx.transport.hello();
  const space = spaceOf(hello, ctx.transport.app);
  await agreeOnKey(ctx, hello.keyRecord, hello.hasData);
  const scope = `${ctx.url}\u0000${space}`;
  const device = await deviceId(ctx.access);
  await rememberUser(ctx.access, ctx.url, space);
  // A server whose sequence is behind this device's cursor lost changes it had acknowledged (a database
  // restored from a backup, a failover to a replica behind): pulls after the cursor would skip its next
  // changes, and fingerprints would keep what it lost from being sent again. Start over with it.
  if (hello.seq < (await readSyncState(ctx.access, scope, [])).cursor) await forgetScope(ctx.access, scope);
  const result: SyncResult = { pushed: 0, pushedDeletes: 0, pulled: 0, threads: 0, scanned: 0, skipped: [] };
  const touched = new Set<string>();

  const pending = await pendingChanges(ctx.access, scope, ctx.threadIds);
  result.scanned = pending.read;
  let left = pending.deletes.length + pending.removed.length + pending.checkpoints.length;
  for (const c of pending.checkpoints) touched.add(c.thread_id);
  for (const d of [...pending.deletes, ...pending.removed]) touched.add(d.thread_id);
  const report = (phase: SyncProgress["phase"]) =>
    ctx.onProgress({ phase, pending: left, threads: touched.size, pushed: result.pushed, pulled: result.pulled });
  report("push");

  result.skipped = await sendPending(
    {
      access: ctx.access,
      transport: ctx.transport,
      scope,
      device,
      batchSize: ctx.batchSize,
      batchBytes: ctx.batchBytes,
      onSent: (checkpoints, deletes) => {
        result.pushed += checkpoints;
        result.pushedDeletes += deletes;
        left -= checkpoints + deletes;
        report("push");
      },
    },
    pending,
  );

  let { cursor } = await readSyncState(ctx.access, scope);
  for (;;) {
    const page = await ctx.transport.pull(cursor, ctx.pullLimit, device);
    if (page.cursor === cursor) break; // nothing new
    // Also when every change was this device's own: the cursor moves past them.
    const applied = await applyChanges(ctx.access, page.changes, {
      scope,
      cursor: page.cursor,
      revalued: pending.revalued,
    });
    for (const threadId of applied.threads) touched.add(threadId);
    result.pulled += page.changes.length;
    cursor = page.cursor;
    report("pull");
    if (!page.more) break;
  }
  result.threads = touched.size;
  // The next round reads what was stamped since this one started, and again the threads not sent.
  const retry = [...new Set([...pending.skipped, ...result.skipped].map((skipped) => skipped.threadId))];
  await recordScan(ctx.access, scope, ctx.threadIds, { since: pending.started, retry }, pending.replayed);
  return result;
}

/**
 * Local changes not yet on the server, counted without the network (for
 * "offline, 12 changes waiting"): against the state of the user last seen
 * at `url`; before any successful round, everything counts.
 */
export async function countPending(access: SaverRawAccess, url: string): Promise<number> {
  const scope = (await lastScope(access, url)) ?? `${url}\u0000`;
  const pending = await pendingChanges(access, scope);
  return pending.deletes.length + pending.removed.length + pending.checkpoints.length;
}
