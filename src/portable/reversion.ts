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

/** New versions fit between a version and the next one in steps of this fraction of the gap. */
const SLOTS = 2 ** 20;

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

/** Every channel version and seen version of a record, per namespace: where {@link VersionPlanner} finds room. */
export function collectVersions(record: CheckpointRecord, used: Map<string, Set<Version>>): void {
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
  /** The next slot to try above each re-versioned version. */
  readonly #slots = new Map<string, number>();

  /** @param used The file's versions per namespace ({@link collectVersions}); new ones are added. */
  constructor(readonly used: Map<string, Set<Version>>) {}

  /**
   * The target versions of one checkpoint.
   *
   * @param held Where the checkpoint's value of each versioned channel comes from.
   */
  plan(record: CheckpointRecord, held: (channel: string) => Held): PlannedVersions {
    const { ns } = record;
    const parentMap = record.parent === null ? undefined : this.#branches.get(checkpointIdentity(ns, record.parent));
    let map = parentMap ?? NO_REMAPS;
    const own = () => (map === (parentMap ?? NO_REMAPS) ? (map = new Map(map)) : map) as Map<string, Version>;
    const channelVersions: ChannelVersions = {};
    const newVersions: ChannelVersions = {};
    for (const [channel, version] of Object.entries(record.checkpoint.channel_versions ?? {})) {
      const kind = held(channel);
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
  #seen(record: CheckpointRecord, map: BranchMap): Record<string, ChannelVersions> {
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

  /** A version after `version` and before every greater version of the namespace, unused so far. */
  #allocate(ns: string, version: Version): Version {
    let used = this.used.get(ns);
    if (!used) this.used.set(ns, (used = new Set()));
    let next: Version | undefined;
    for (const other of used) if (after(other, version) && (next === undefined || after(next, other))) next = other;
    const slotKey = `${ns}\u0000${versionKey(version)}`;
    for (let slot = this.#slots.get(slotKey) ?? 1; slot < SLOTS; slot++) {
      let candidate: Version;
      if (typeof version === "number") {
        const upper = typeof next === "number" ? Math.min(next, version + 1) : version + 1;
        candidate = version + (upper - version) * (slot / SLOTS);
      } else {
        candidate = `${version}.${slot}`;
      }
      if (!after(candidate, version) || (next !== undefined && !after(next, candidate))) break;
      if (used.has(candidate)) continue;
      this.#slots.set(slotKey, slot + 1);
      used.add(candidate);
      return candidate;
    }
    throw new Error(
      `two branches hold different values of one channel under version ${JSON.stringify(version)} (namespace "${ns}"), and no version is left between it and the next one to tell them apart`,
    );
  }
}
