/**
 * The change feed's messages to other tabs: posted later than the write that
 * made them (a put's with the puts of its window, any other change's a task
 * later), in order, and never lost to a close() right after (events.ts). Two
 * feeds on one database name stand for two tabs. Runs in Node and Chromium.
 */
import { afterEach, describe, expect, it } from "vitest";
import { nextTask } from "../core/tasks.js";
import { ChangeFeed, type CheckpointChange } from "./events.js";
import { freshDbName } from "../../test/support/databases.js";

const feeds: ChangeFeed[] = [];
afterEach(() => feeds.splice(0).forEach((feed) => feed.close()));

/** Two feeds on one database: this tab and another, with what the other receives. */
function twoTabs() {
  const dbName = freshDbName("events");
  const here = new ChangeFeed(dbName);
  const there = new ChangeFeed(dbName);
  feeds.push(here, there);
  const received: CheckpointChange[] = [];
  there.subscribe((change) => received.push(change));
  return { here, received };
}

/** Waits until `received` holds `count` changes (or fails after two seconds). */
async function until(received: CheckpointChange[], count: number) {
  const deadline = Date.now() + 2000;
  while (received.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  return received.map((change) => `${change.kind} ${change.threadId} ${String(change.checkpointId)} ${change.remote}`);
}

/** Calls `seen` before each BroadcastChannel post of this realm; returns the function that puts posting back. */
function onPosts(seen: () => void): () => void {
  const real = BroadcastChannel.prototype.postMessage;
  BroadcastChannel.prototype.postMessage = function (this: BroadcastChannel, message: unknown) {
    seen();
    real.call(this, message);
  };
  return () => {
    BroadcastChannel.prototype.postMessage = real;
  };
}

describe("the change feed across tabs", () => {
  it("tells this tab's listeners at once, and posts to other tabs after, in order", async () => {
    const { here, received } = twoTabs();
    const local: string[] = [];
    here.subscribe((change) => local.push(`${change.kind} ${String(change.checkpointId)} ${change.remote}`));
    here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c1", kind: "put" });
    here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c2", kind: "put" });
    here.emit({ threadId: "t", kind: "delete" });
    expect(local).toEqual(["put c1 false", "put c2 false", "delete undefined false"]);
    expect(await until(received, 3)).toEqual(["put t c1 true", "put t c2 true", "delete t undefined true"]);
  });

  it("posts what it holds when closed right after a change, and leaves no channel open", async () => {
    const { here, received } = twoTabs();
    // Its channel open, as after any earlier change.
    here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c0", kind: "put" });
    await until(received, 1);
    const Original = globalThis.BroadcastChannel;
    let opened = 0;
    globalThis.BroadcastChannel = class extends Original {
      constructor(name: string) {
        super(name);
        opened++;
      }
    };
    try {
      here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c1", kind: "put" });
      here.close();
      expect(await until(received, 2)).toEqual(["put t c0 true", "put t c1 true"]);
      // Posted by close(): the task the post was put off to finds nothing left, and opens nothing.
      expect(opened).toBe(0);
    } finally {
      globalThis.BroadcastChannel = Original;
    }
    // A change after the close opens the channel again.
    here.emit({ threadId: "u", kind: "delete" });
    expect(await until(received, 3)).toEqual(["put t c0 true", "put t c1 true", "delete u undefined true"]);
  });

  it.runIf(typeof document === "undefined")(
    "posts where there is no page (a worker, Node) before the writer's code goes on, nothing announcing the end",
    async () => {
      const { here, received } = twoTabs();
      let posted = 0;
      const restore = onPosts(() => posted++);
      try {
        here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c1", kind: "put" });
        here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c2", kind: "put" });
        // A writer resuming after its put: the microtask the emits queued ran first.
        await Promise.resolve();
        expect(posted).toBe(2);
        expect(await until(received, 2)).toEqual(["put t c1 true", "put t c2 true"]);
      } finally {
        restore();
      }
    },
  );

  // A page's notices wait for each other: where there is no page they go at once (above).
  it.runIf(typeof document !== "undefined")(
    "posts the notices of puts made in successive tasks in one task, and a later delete after them",
    async () => {
      const { here, received } = twoTabs();
      // Which synchronous run each post happened in: the posts of one loop share a number.
      const runs: number[] = [];
      let run = 0;
      let inRun = false;
      const restore = onPosts(() => {
        if (!inRun) {
          inRun = true;
          run++;
          queueMicrotask(() => (inRun = false));
        }
        runs.push(run);
      });
      try {
        for (const id of ["c1", "c2", "c3"]) {
          here.emit({ threadId: "t", checkpointNs: "", checkpointId: id, kind: "put" });
          await nextTask();
        }
        here.emit({ threadId: "t", kind: "delete" });
        expect(await until(received, 4)).toEqual([
          "put t c1 true",
          "put t c2 true",
          "put t c3 true",
          "delete t undefined true",
        ]);
        // One first post of a task for the four: the cost events.ts saves (unless the
        // machine stalled a whole window between two emits, which would split them).
        expect(new Set(runs).size).toBeLessThanOrEqual(2);
      } finally {
        restore();
      }
    },
  );

  it.runIf(typeof document !== "undefined")(
    "posts a put's notice a task later in a hidden page, whose timers are throttled",
    async () => {
      const { here, received } = twoTabs();
      here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c0", kind: "put" });
      await until(received, 1);
      const visibility = Object.getOwnPropertyDescriptor(Document.prototype, "visibilityState")!;
      Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
      let posted = 0;
      const restore = onPosts(() => posted++);
      try {
        here.emit({ threadId: "t", checkpointNs: "", checkpointId: "c1", kind: "put" });
        // Posted in the next task, not when a 16 ms timer (a second or more, hidden) fires.
        await nextTask();
        await nextTask();
        expect(posted).toBe(1);
        expect(await until(received, 2)).toEqual(["put t c0 true", "put t c1 true"]);
      } finally {
        restore();
        delete (document as { visibilityState?: unknown }).visibilityState;
        expect(Object.getOwnPropertyDescriptor(Document.prototype, "visibilityState")).toEqual(visibility);
      }
    },
  );
});
