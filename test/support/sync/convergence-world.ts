/**
 * The parts of the sync convergence test (convergence.ts runs them): a
 * device's network link (a TCP proxy that can be offline or cut connections
 * mid-request and mid-response), and the oracle's view of a device's
 * database (its rows read raw by convergence-rows.ts, in Node or in a
 * Chromium page) and of the server's tables, not through the saver or the
 * sync code under test, so the invariants are checked by code that shares
 * nothing with what they check. The graph the devices run is in
 * convergence-graph.ts.
 */
import { createHash } from "node:crypto";
import { connect, createServer, type Server, type Socket } from "node:net";
import type pg from "pg";
import type { DeviceRows } from "./convergence-rows.js";

/** A device's way to the servers: offline, or cutting connections after a random byte count. */
export class Link {
  offline = false;
  /** Chance that a new connection is cut after 1–4000 bytes (either direction). */
  cutChance = 0;
  cuts = 0;
  readonly #sockets = new Set<Socket>();
  readonly #server: Server;
  #port = 0;

  constructor(
    readonly targets: () => number[],
    readonly random: () => number,
  ) {
    this.#server = createServer((client) => this.#relay(client));
  }

  /** The URL devices use. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((done) => this.#server.listen(0, "127.0.0.1", done));
    this.#port = (this.#server.address() as { port: number }).port;
  }

  /** Offline drops the open connections too (keep-alive would outlive it). */
  setOffline(offline: boolean): void {
    this.offline = offline;
    if (offline) for (const socket of this.#sockets) socket.destroy();
  }

  #relay(client: Socket): void {
    this.#sockets.add(client);
    client.on("close", () => this.#sockets.delete(client)).on("error", () => client.destroy());
    const targets = this.targets();
    if (this.offline || targets.length === 0) return void client.destroy();
    const upstream = connect(targets[Math.floor(this.random() * targets.length)]!, "127.0.0.1");
    this.#sockets.add(upstream);
    let budget = this.random() < this.cutChance ? 1 + Math.floor(this.random() * 4000) : Infinity;
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    const pipe = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        if (chunk.length >= budget) {
          to.write(chunk.subarray(0, budget));
          this.cuts += 1;
          return end();
        }
        budget -= chunk.length;
        to.write(chunk);
      });
    pipe(client, upstream);
    pipe(upstream, client);
    upstream.on("close", () => (this.#sockets.delete(upstream), end())).on("error", end);
    client.on("close", end);
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((done) => this.#server.close(() => done()));
  }
}

/** A stored `[type, bytes]` value, as a short digest. */
function digest(type: string, bytes: Uint8Array): string {
  return createHash("sha256").update(type).update("\0").update(bytes).digest("hex").slice(0, 16);
}

/** One checkpoint as the oracle sees it. */
export interface CheckpointView {
  thread: string;
  ns: string;
  id: string;
  parent?: string;
  runId?: string;
  /** Digest of the checkpoint and metadata bytes. */
  body: string;
  versions: Record<string, string>;
}

/** A database (a device's or the server's share of one user) as the oracle sees it. */
export interface Inventory {
  /** By `thread\0ns\0id`. */
  checkpoints: Map<string, CheckpointView>;
  /** `thread\0ns\0channel\0version` → value digest. */
  blobs: Map<string, string>;
  /** By checkpoint key: `task\0idx\0channel` → value digest. */
  writes: Map<string, Map<string, string>>;
  /** Thread → max_deleted_id. */
  tombstones: Map<string, string>;
}

/** The key of a checkpoint in an {@link Inventory}. */
export const cpKey = (thread: string, ns: string, id: string): string => `${thread}\u0000${ns}\u0000${id}`;

type Typed = [string, Uint8Array];

function emptyInventory(): Inventory {
  return { checkpoints: new Map(), blobs: new Map(), writes: new Map(), tombstones: new Map() };
}

/**
 * Records the write that `row` places (thread_id, checkpoint_ns,
 * checkpoint_id, task_id, idx, channel: the saver's rows and the server's
 * name them alike) with `value`, its digest.
 */
function addWrite(inv: Inventory, row: Record<string, unknown>, value: string): void {
  const cp = cpKey(row.thread_id as string, row.checkpoint_ns as string, row.checkpoint_id as string);
  let map = inv.writes.get(cp);
  if (!map) inv.writes.set(cp, (map = new Map()));
  map.set(`${row.task_id as string}\u0000${row.idx as number}\u0000${row.channel as string}`, value);
}

/** A channel version as text that keeps its type (the server stores `n:1` and `s:1` apart). */
function typedVersion(version: unknown): string {
  return typeof version === "number" ? `n:${version}` : `s:${String(version)}`;
}

function versionsOf(raw: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [channel, version] of Object.entries(raw)) out[channel] = typedVersion(version);
  return out;
}

/**
 * The oracle's view of a device's rows (read by {@link readDeviceRows}, in
 * Node or in a Chromium page). Without `full`, values were not read and are
 * not digested (blobs and writes by key only): enough for
 * {@link pageInvariants}, and far cheaper per page.
 */
export function deviceInventory(rows: DeviceRows, full: boolean): Inventory {
  type Row = Record<string, unknown>;
  const valueDigest = (value: unknown) => (full ? digest(...(value as Typed)) : "");
  const inv = emptyInventory();
  for (const row of rows.checkpoints) {
    const [thread, ns, id] = [row.thread_id, row.checkpoint_ns, row.checkpoint_id] as string[];
    inv.checkpoints.set(cpKey(thread!, ns!, id!), {
      thread: thread!,
      ns: ns!,
      id: id!,
      parent: row.parent_checkpoint_id as string | undefined,
      runId: row.run_id as string | undefined,
      body: `${valueDigest(row.checkpoint)}:${valueDigest(row.metadata)}`,
      versions: versionsOf(row.channel_versions as Record<string, unknown>),
    });
  }
  for (const row of rows.blobs) {
    const key = `${String(row.thread_id)}\0${String(row.checkpoint_ns)}\0${String(row.channel)}`;
    inv.blobs.set(`${key}\0${typedVersion(row.version)}`, valueDigest((row as Row).value));
  }
  for (const row of rows.writes) {
    // Namespaces starting with U+0000 are the saver's own rows (a tombstone's copy), never replicated.
    if (String(row.checkpoint_ns).startsWith("\u0000")) continue;
    addWrite(inv, row, valueDigest((row as Row).value));
  }
  for (const row of rows.meta) {
    const value = row.value as { max_deleted_id?: unknown } | undefined;
    const name = String(row.name);
    if (name.startsWith("tombstone\u0000") && typeof value?.max_deleted_id === "string")
      inv.tombstones.set(name.slice("tombstone\u0000".length), value.max_deleted_id);
  }
  return inv;
}

/** Reads what the server holds for `user`. */
export async function serverInventory(pool: pg.Pool, user: string): Promise<Inventory & { uniqueSeq: boolean }> {
  const inv = emptyInventory();
  const cps = await pool.query<Record<string, string | Buffer | null>>(
    `SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, checkpoint_type, checkpoint,
       metadata_type, metadata, channel_versions FROM lgsync_checkpoints WHERE user_id = $1`,
    [user],
  );
  for (const row of cps.rows) {
    const [thread, ns, id] = [row.thread_id, row.checkpoint_ns, row.checkpoint_id] as string[];
    inv.checkpoints.set(cpKey(thread!, ns!, id!), {
      thread: thread!,
      ns: ns!,
      id: id!,
      parent: (row.parent_checkpoint_id as string | null) ?? undefined,
      runId: (row.run_id as string | null) ?? undefined,
      body: `${digest(row.checkpoint_type as string, row.checkpoint as Buffer)}:${digest(row.metadata_type as string, row.metadata as Buffer)}`,
      versions: versionsOf(JSON.parse(row.channel_versions as string) as Record<string, unknown>),
    });
  }
  const blobs = await pool.query<Record<string, string | Buffer>>(
    "SELECT thread_id, checkpoint_ns, channel, version, type, value FROM lgsync_blobs WHERE user_id = $1",
    [user],
  );
  for (const row of blobs.rows)
    inv.blobs.set(
      `${String(row.thread_id)}\0${String(row.checkpoint_ns)}\0${String(row.channel)}\0${String(row.version)}`,
      digest(row.type as string, row.value as Buffer),
    );
  const writes = await pool.query<Record<string, string | number | Buffer>>(
    `SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value FROM lgsync_writes WHERE user_id = $1`,
    [user],
  );
  for (const row of writes.rows) addWrite(inv, row, digest(row.type as string, row.value as Buffer));
  const tombs = await pool.query<{ thread_id: string; max_deleted_id: string }>(
    "SELECT thread_id, max_deleted_id FROM lgsync_tombstones WHERE user_id = $1",
    [user],
  );
  for (const row of tombs.rows) inv.tombstones.set(row.thread_id, row.max_deleted_id);
  const seqs = await pool.query<{ n: string; d: string }>(
    "SELECT count(*) AS n, count(DISTINCT seq) AS d FROM lgsync_checkpoints WHERE user_id = $1",
    [user],
  );
  return { ...inv, uniqueSeq: seqs.rows[0]!.n === seqs.rows[0]!.d };
}

/**
 * The replicated content of an inventory, one line per checkpoint (by its
 * key): its identity, parent, bytes, the values its versions reference and
 * its pending writes. Two stores hold the same set exactly when these match.
 */
export function replicatedLines(inv: Inventory): Map<string, string> {
  const lines = new Map<string, string>();
  for (const [key, cp] of inv.checkpoints) {
    const values = Object.entries(cp.versions)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(
        ([channel, version]) =>
          `${channel}=${version}:${inv.blobs.get(`${cp.thread}\0${cp.ns}\0${channel}\0${version}`) ?? "MISSING"}`,
      );
    const writes = [...(inv.writes.get(key) ?? new Map<string, string>())]
      .map(([k, v]) => `${k.replaceAll("\u0000", "/")}:${v}`)
      .sort();
    lines.set(
      key,
      [
        key.replaceAll("\u0000", "|"),
        cp.parent ?? "-",
        cp.runId ?? "-",
        cp.body,
        values.join(","),
        writes.join(","),
      ].join(" "),
    );
  }
  return lines;
}

/** What the oracle knows was removed on purpose, so a hole it leaves is not a finding. */
export interface Removals {
  /** Thread → `ns\0id` of checkpoints removed by prune or deleteForRuns on some device. */
  byThread: Map<string, Set<string>>;
  /**
   * Copy → the newest tombstone its sources had where they were copied: a
   * copy carries the checkpoints a delete left without their parent (another
   * device had continued the deleted line), but not the tombstone.
   */
  copiedTombstones: Map<string, string>;
}

/**
 * The invariants that hold after every committed pulled page (and between
 * operations): every checkpoint's parent is there (unless the oracle saw it
 * removed, or the thread's tombstone covers it), every channel version it
 * references has its value (where a value exists: `knownBlobs` holds every
 * value any store was seen holding; a version without a value, like a
 * consumed `__start__`, has none anywhere; `late` values, a prune's snapshots, come with a later pull),
 * every write has its checkpoint, and no checkpoint sits at or below its thread's tombstone. Returns the
 * problems.
 */
export function pageInvariants(
  inv: Inventory,
  removals: Removals,
  knownBlobs: Set<string>,
  late?: Set<string>,
): string[] {
  const problems: string[] = [];
  for (const [key, cp] of inv.checkpoints) {
    const shown = key.replaceAll("\u0000", "|");
    const tomb = inv.tombstones.get(cp.thread);
    if (tomb !== undefined && cp.id <= tomb) problems.push(`${shown} is at or below its thread's tombstone ${tomb}`);
    if (cp.parent !== undefined && !inv.checkpoints.has(cpKey(cp.thread, cp.ns, cp.parent))) {
      const removed = removals.byThread.get(cp.thread)?.has(`${cp.ns}\0${cp.parent}`);
      const copied = removals.copiedTombstones.get(cp.thread);
      const deleted = (tomb !== undefined && cp.parent <= tomb) || (copied !== undefined && cp.parent <= copied);
      if (!removed && !deleted) problems.push(`${shown} has no parent ${cp.parent}`);
    }
    for (const [channel, version] of Object.entries(cp.versions)) {
      const blob = `${cp.thread}\0${cp.ns}\0${channel}\0${version}`;
      if (knownBlobs.has(blob) && !inv.blobs.has(blob) && !late?.has(blob))
        problems.push(`${shown} lacks the value of ${channel}@${version}`);
    }
  }
  for (const key of inv.writes.keys())
    if (!inv.checkpoints.has(key)) problems.push(`writes of ${key.replaceAll("\u0000", "|")} without their checkpoint`);
  return problems;
}

/** The key of a value: `thread\0ns\0channel\0version`, as {@link Inventory.blobs} has them. */
const valueKey = (cp: CheckpointView, channel: string, version: string): string =>
  `${cp.thread}\u0000${cp.ns}\u0000${channel}\u0000${version}`;

/**
 * Notes in `heldFor`, for each value `inv` holds, the checkpoints of `inv`
 * (by {@link cpKey}) that name its version: what a store held the value for.
 */
export function noteHolders(inv: Inventory, heldFor: Map<string, Set<string>>): void {
  for (const [key, cp] of inv.checkpoints)
    for (const [channel, version] of Object.entries(cp.versions)) {
      const value = valueKey(cp, channel, version);
      if (!inv.blobs.has(value)) continue;
      let set = heldFor.get(value);
      if (!set) heldFor.set(value, (set = new Set()));
      set.add(key);
    }
}

/**
 * The values of `known` that belonged to deleted history only: every
 * checkpoint a store held one for (`heldFor`, by {@link noteHolders}) is at
 * or below its thread's tombstone in `tombstones`. A store drops such a
 * value with the last checkpoint naming it, so a checkpoint above the
 * tombstone that names its version (written on a device that never held
 * the value: a delta channel's version, which a prune elsewhere gave a
 * snapshot) is left without it by the user's delete, not by sync.
 */
export function deletedHistory(
  known: Iterable<string>,
  heldFor: Map<string, Set<string>>,
  tombstones: Map<string, string>,
): string[] {
  return [...known].filter((value) => {
    const tomb = tombstones.get(value.slice(0, value.indexOf("\u0000")));
    if (tomb === undefined) return false;
    return [...(heldFor.get(value) ?? [])].every((key) => key.slice(key.lastIndexOf("\u0000") + 1) <= tomb);
  });
}
