/**
 * Channel versions on import: a forked branch's value whose version another
 * branch used first for another value gets a version of its own.
 *
 * Savers with integer versions (MemorySaver, SqliteSaver) give both branches
 * of a fork the same next version, each with its own value: they keep values
 * per checkpoint, so that is harmless there. A saver that keeps one value per
 * `(ns, channel, version)` (IndexedDBSaver, PostgresSaver) stores the first
 * and reads it back for both branches. An import cannot tell how its target
 * stores values, so it re-versions such values for every target: ordering
 * is what LangGraph reads from versions (a node runs when a channel's version
 * is greater than the one it saw, a new version follows the greatest), so the
 * new version lies strictly between the old one and the next version the file
 * uses, and the branch's `versions_seen` follow it. Threads without such
 * collisions keep every version verbatim.
 */
import type { ChannelVersions } from "@langchain/langgraph-checkpoint";
import type { CheckpointRecord } from "./format.js";
import type { Version } from "../rows/shapes.js";
import { blobIdentity, checkpointIdentity, versionKey } from "../core/identity.js";

/** Where a checkpoint's value of a channel comes from in the file. */
export type Held = "blob" | "inline" | "none";

/** Versions a branch re-versioned: `channel \0 versionKey(file version)` → target version. */
type BranchMap = ReadonlyMap<string, Version>;

/** Shared by every checkpoint whose branch re-versioned nothing. */
const NO_REMAPS: BranchMap = new Map();

/** One checkpoint's versions for the target. */
export interface PlannedVersions {
  channelVersions: ChannelVersions;
  versionsSeen: Record<string, ChannelVersions>;
  /** The `newVersions` argument of its `put`: the versions no earlier put of the import stored. */
  newVersions: ChannelVersions;
}

/** True when `a` sorts after `b` both for LangGraph's `>` and its `compareChannelVersions`. */
function after(a: Version, b: Version): boolean {
  if (typeof a === "number" && typeof b === "number") return a > b;
  if (typeof a !== typeof b) return false;
  return a > b && String(a).localeCompare(String(b)) > 0;
}

/** What planning a checkpoint's versions reads of its record: kept by validation, which decodes each record once. */
export interface PlanInput {
  ns: string;
  id: string;
  parent: string | null;
  checkpoint: Pick<CheckpointRecord["checkpoint"], "channel_versions" | "versions_seen">;
  /** Where the checkpoint's value of each versioned channel comes from. */
  held: Record<string, Held>;
}

/** The planning input of `record`. */
export function planInput(record: CheckpointRecord): PlanInput {
  const held: Record<string, Held> = {};
  const blobs = new Set(record.blobs);
  for (const channel of Object.keys(record.checkpoint.channel_versions ?? {})) {
    held[channel] = blobs.has(channel) ? "blob" : Object.hasOwn(record.values, channel) ? "inline" : "none";
  }
  const { channel_versions, versions_seen } = record.checkpoint;
  return { ns: record.ns, id: record.id, parent: record.parent, checkpoint: { channel_versions, versions_seen }, held };
}

/**
 * The `slot`-th of `count` versions spread evenly between `version` and
 * `next` (or the next integer, if sooner): as far apart as the room allows,
 * so that a thread imported, forked again in an integer-version saver (whose
 * next versions keep the fraction) and imported again still finds room. A string version that reads as a number (other savers'
 * `"00…05.123"`) gets a string of the same width that does too: LangGraph
 * compares versions with `>`, which reads such strings as numbers, and a new
 * number version must still compare with it (`"…05.123.1"` reads as NaN).
 */
function between(version: Version, next: Version | undefined, slot: number, count: number): Version | undefined {
  const low = typeof version === "number" ? version : Number(version);
  if (!Number.isFinite(low)) return typeof version === "string" ? `${version}.${slot}` : undefined;
  const bound = next === undefined ? Number.NaN : typeof next === "number" ? next : Number(next);
  const high = Number.isFinite(bound) ? Math.min(bound, Math.floor(low) + 1) : Math.floor(low) + 1;
  const value = low + (high - low) * (slot / (count + 1));
  if (typeof version === "number") return value;
  const width = (version.split(".")[0] ?? "").length;
  const whole = Math.floor(value);
  const fraction = (value - whole).toFixed(20).slice(1); // ".xxxx…"
  return `${String(whole).padStart(width, "0")}${fraction}`;
}

/** Every channel version and seen version of a record, per namespace: where {@link VersionPlanner} finds room. */
export function collectVersions(record: PlanInput, used: Map<string, Set<Version>>): void {
  let set = used.get(record.ns);
  if (!set) used.set(record.ns, (set = new Set()));
  const add = (versions: unknown) => {
    if (typeof versions !== "object" || versions === null) return;
    for (const version of Object.values(versions)) {
      if (typeof version === "number" || typeof version === "string") set.add(version);
    }
  };
  add(record.checkpoint.channel_versions);
  for (const seen of Object.values(record.checkpoint.versions_seen ?? {})) add(seen);
}

/**
 * Decides the target's channel versions, checkpoint by checkpoint in file
 * order (parents first). A version keeps its value when what the target holds
 * under it is the same (the same `B` record, or no value); otherwise the
 * branch gets a new version for it, which its descendants inherit.
 */
export class VersionPlanner {
  /** What each target `(ns, channel, version)` holds, once a put stored it. */
  readonly #held = new Map<string, Held>();
  /** Each checkpoint's branch map, for its children. */
  readonly #branches = new Map<string, BranchMap>();
  /** How many new versions each version got so far (by namespace and version). */
  readonly #slots = new Map<string, number>();
  /** The new versions given, by namespace: each is given once. */
  readonly #made = new Set<string>();

  /**
   * @param used The file's own versions per namespace ({@link collectVersions}): the bounds new
   * versions stay under. Versions made here are not added: each bound stays a version of the file.
   * @param counts How many new versions each version needs, from a first pass over the file
   * ({@link VersionPlanner.counts}); without it, the planner only counts (its versions are
   * placeholders), as that first pass does.
   */
  constructor(
    readonly used: ReadonlyMap<string, ReadonlySet<Version>>,
    readonly counts?: ReadonlyMap<string, number>,
  ) {}

  /** How many new versions each version needed: for the planner of the second pass. */
  get needed(): ReadonlyMap<string, number> {
    return this.#slots;
  }

  /** The target versions of one checkpoint (call in file order: parents first). */
  plan(record: PlanInput): PlannedVersions {
    const { ns } = record;
    const parentMap = record.parent === null ? undefined : this.#branches.get(checkpointIdentity(ns, record.parent));
    let map = parentMap ?? NO_REMAPS;
    const own = () => (map === (parentMap ?? NO_REMAPS) ? (map = new Map(map)) : map) as Map<string, Version>;
    const channelVersions: ChannelVersions = {};
    const newVersions: ChannelVersions = {};
    for (const [channel, version] of Object.entries(record.checkpoint.channel_versions ?? {})) {
      const kind = record.held[channel] ?? "none";
      const slot = `${channel}\u0000${versionKey(version)}`;
      const inherited = map.get(slot);
      const first = this.#held.get(blobIdentity(ns, channel, version));
      let target: Version;
      if (inherited !== undefined && this.#held.get(blobIdentity(ns, channel, inherited)) === kind) target = inherited;
      // An inline value is one the `B` record of its version does not hold: another branch's,
      // unless this branch stored it (then inherited above).
      else if (first === undefined || (first === kind && kind !== "inline")) target = version;
      else target = this.#allocate(ns, version);
      // Inline values are remembered even under their own version, so this branch finds them again.
      if (target !== version || kind === "inline" || inherited !== undefined) own().set(slot, target);
      const key = blobIdentity(ns, channel, target);
      if (!this.#held.has(key)) {
        this.#held.set(key, kind);
        newVersions[channel] = target;
      }
      channelVersions[channel] = target;
    }
    this.#branches.set(checkpointIdentity(ns, record.id), map);
    return { channelVersions, versionsSeen: this.#seen(record, map), newVersions };
  }

  /** `versions_seen` with the branch's re-versioned versions; the record's own object when none applies. */
  #seen(record: PlanInput, map: BranchMap): Record<string, ChannelVersions> {
    const seen = record.checkpoint.versions_seen;
    if (map.size === 0 || typeof seen !== "object" || seen === null) return seen;
    const out: Record<string, ChannelVersions> = {};
    for (const [node, versions] of Object.entries(seen)) {
      const mapped: ChannelVersions = {};
      for (const [channel, version] of Object.entries(versions ?? {})) {
        const valid = typeof version === "number" || typeof version === "string";
        mapped[channel] = valid ? (map.get(`${channel}\u0000${versionKey(version)}`) ?? version) : version;
      }
      out[node] = mapped;
    }
    return out;
  }

  /**
   * A version after `version` and before every greater version the file uses
   * in the namespace, not given before. The bound is the file's own next
   * version, never one made here (helper-52: bounding each by the one made
   * before it shrank the room by 2^20 at each edit of a turn), and the new
   * versions of one version are spread evenly over that room, as many as the
   * counting pass found (helper-58: tiny steps compounded over round trips
   * through an integer-version saver, until the third found no room).
   * Branches never compare their versions with each other's, so their order
   * among themselves does not matter.
   * @throws {Error} when no version is left there (versions a double cannot split).
   */
  #allocate(ns: string, version: Version): Version {
    const slotKey = `${ns}\u0000${versionKey(version)}`;
    const slot = (this.#slots.get(slotKey) ?? 0) + 1;
    this.#slots.set(slotKey, slot);
    // The counting pass: a placeholder as unique as a real version, so it decides the same.
    if (!this.counts) return `\u0000${slotKey}\u0000${slot}`;
    let next: Version | undefined;
    for (const other of this.used.get(ns) ?? []) {
      if (after(other, version) && (next === undefined || after(next, other))) next = other;
    }
    const candidate = between(version, next, slot, this.counts.get(slotKey) ?? slot);
    const made = candidate === undefined ? "" : `${ns}\u0000${versionKey(candidate)}`;
    // Strictly between, and not one given before (helper-58: slots a double could not tell
    // apart rounded to one version, and branches shared it silently).
    if (
      candidate === undefined ||
      !after(candidate, version) ||
      (next !== undefined && !after(next, candidate)) ||
      this.#made.has(made)
    ) {
      throw new Error(
        `two branches hold different values of one channel under version ${JSON.stringify(version)} (namespace "${ns}"), and no version is left between it and the next one to tell them apart`,
      );
    }
    this.#made.add(made);
    return candidate;
  }
}
