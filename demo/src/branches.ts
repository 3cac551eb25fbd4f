/**
 * Where the open thread's branches diverge, for the chat's branch switcher
 * ("‹ 2 / 3 ›" under a message that was edited or regenerated).
 *
 * A branch point is a checkpoint with more than one child: Edit and
 * Regenerate run from the checkpoint before a message, Fork writes a child
 * of an older one. The message that differs is the one at the branch
 * point's message count; each child leads to the newest checkpoint below it,
 * which is what switching to that branch continues from.
 *
 * The rows come from the saver's `list()` (see timeline.ts), kept per thread
 * and read again only from the newest end: a turn adds a few checkpoints, and
 * re-reading a 300-turn thread after every turn would cost more than the turn.
 */
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { countMessages, rowOf, type Row } from "./timeline.js";

/** The branches at one message of the current conversation. */
export interface BranchPoint {
  /** The index, in the current conversation's messages, of the first message that differs. */
  messageIndex: number;
  /** For each branch, oldest first: the newest checkpoint on it (what a switch forks from). */
  heads: string[];
  /** Which of `heads` the current conversation is on. */
  current: number;
}

/**
 * The branch points on the path from the thread's root to `headId`, oldest
 * first. `rows` is the thread's root-namespace checkpoints, newest first
 * (checkpoint ids sort by time), with `messageCount` filled in where known;
 * a branch point whose count is unknown is left out.
 */
export function branchPoints(rows: Row[], headId: string): BranchPoint[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const children = new Map<string, Row[]>();
  for (const row of rows) {
    if (!row.parentId || !byId.has(row.parentId)) continue;
    const list = children.get(row.parentId) ?? [];
    list.push(row);
    children.set(row.parentId, list);
  }
  // The newest checkpoint under each row: leaves newest first, each claiming its ancestors still unclaimed.
  const newestBelow = new Map<string, string>();
  for (const leaf of rows) {
    if (children.has(leaf.id)) continue;
    for (let row: Row | undefined = leaf; row && !newestBelow.has(row.id); row = byId.get(row.parentId ?? "")) {
      newestBelow.set(row.id, leaf.id);
    }
  }
  const points: BranchPoint[] = [];
  const seen = new Set<string>();
  let child = byId.get(headId);
  while (child?.parentId) {
    const row = byId.get(child.parentId);
    // A parent link that loops (a damaged thread) ends the walk instead of hanging the page.
    if (!row || seen.has(row.id)) break;
    seen.add(row.id);
    const siblings = children.get(row.id) ?? [];
    if (siblings.length > 1 && row.messageCount !== undefined) {
      // Rows are newest first: reversed, the branches read oldest first, as they were made.
      const ordered = [...siblings].reverse();
      points.push({
        messageIndex: row.messageCount,
        heads: ordered.map((sibling) => newestBelow.get(sibling.id) ?? sibling.id),
        current: ordered.indexOf(child),
      });
    }
    child = row;
  }
  return points.reverse();
}

/** The part of the saver's `list()` the cache reads: the thread's checkpoints, newest first. */
export type Timeline = (threadId: string) => AsyncIterable<CheckpointTuple>;

/**
 * One thread's rows, kept between refreshes. `update` reads the timeline
 * from the newest end and stops at the first checkpoint it already holds
 * that has children: everything older is unchanged, since a checkpoint never
 * changes once it has a child, while a leaf may still gain pending writes (the
 * step that starts from it), which the message counts of its children use.
 * Anything else (a delete, a prune, another tab's or device's write) calls
 * `invalidate`, and the next update reads the whole thread again.
 */
export class BranchCache {
  #threadId: string | undefined;
  #rows: Row[] = [];
  readonly #timeline: Timeline;

  constructor(timeline: Timeline) {
    this.#timeline = timeline;
  }

  /** Forgets what was read, for one thread or (no argument) any. */
  invalidate(threadId?: string): void {
    if (threadId === undefined || threadId === this.#threadId) {
      this.#threadId = undefined;
      this.#rows = [];
    }
  }

  /** Takes a whole thread read elsewhere (the History panel's), message counts filled in. */
  adopt(threadId: string, rows: Row[]): void {
    this.#threadId = threadId;
    this.#rows = rows;
  }

  /** The branch points of the thread as last read, on the way to its newest checkpoint. */
  points(threadId: string): BranchPoint[] {
    const rows = this.#threadId === threadId ? this.#rows : [];
    return rows.length ? branchPoints(rows, rows[0]!.id) : [];
  }

  /**
   * Reads what changed since the last read (the whole thread the first
   * time). `cancelled` is asked between checkpoints: a read given up keeps nothing.
   * Returns false when it was given up.
   */
  async update(threadId: string, cancelled: () => boolean = () => false): Promise<boolean> {
    const known = this.#threadId === threadId ? this.#rows : [];
    const parents = new Set(known.map((row) => row.parentId).filter((id) => id !== undefined));
    const byId = new Map(known.map((row) => [row.id, row]));
    const fresh: Row[] = [];
    let stoppedAt: Row | undefined;
    for await (const tuple of this.#timeline(threadId)) {
      if (cancelled()) return false;
      const old = byId.get(tuple.checkpoint.id);
      if (old && parents.has(old.id)) {
        stoppedAt = old;
        break;
      }
      fresh.push(rowOf(tuple));
    }
    const freshIds = new Set(fresh.map((row) => row.id));
    // The older part, unchanged: from where the read stopped, minus rows read again.
    const rest = stoppedAt ? known.slice(known.indexOf(stoppedAt)).filter((row) => !freshIds.has(row.id)) : [];
    const rows = [...fresh, ...rest];
    countMessages(rows);
    this.adopt(threadId, rows);
    return true;
  }
}
