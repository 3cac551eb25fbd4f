/**
 * What the agent server's race tests share: waits, the chat's messages as
 * text, thread stores and savers whose writes take longer (a busy
 * IndexedDB, or any AgentThreadStore: they widen windows that exist without
 * them), another tab's run that never answers, and LangGraph's embed
 * server's in-memory thread store.
 */
import type { ThreadSaver } from "@langchain/langgraph-api/experimental/embed";
import type { Client } from "@langchain/langgraph-sdk";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import { IndexedDBThreadStore, type ThreadStatus } from "../../../src/agent-server/index.js";
import { RunLog } from "../../../src/agent-server/run-log.js";
import { runnerLockName } from "../../../src/agent-server/remote-run.js";
import { openAgentDatabase } from "../../../src/agent-server/schema.js";
import { defaultLockManager, runLockName } from "../../../src/runs/locks.js";

/** The test graph's state, as the SDK returns it. */
export type Chat = { messages: { type: string; content: string }[] };

/** An input of one human message. */
export const human = (content: string) => ({ messages: [{ type: "human", content }] });

/** A state's messages as `type: content` lines (none when it has no messages). */
export const texts = (values: unknown): string[] =>
  ((values as Partial<Chat>).messages ?? []).map((m) => `${m.type}: ${m.content}`);

/** Waits `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `check` holds, asking every 10 ms; throws after `ms`. The
 * bound only stops a wait for what never comes: 30 s by default, since on a
 * loaded machine a run's few status writes took more than 5 s, and a wait
 * that fails still says "timed out" before the test's own timeout (60 s).
 */
export async function until(check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  for (const deadline = Date.now() + ms; !(await check()); await sleep(10)) {
    if (Date.now() > deadline) throw new Error("timed out");
  }
}

/**
 * Waits until run `runId` is at `node`: its thread's last checkpoint is the
 * run's, with `node` next (written as the node starts). "running" comes
 * sooner: a run stopped then may have written no checkpoint, or only its
 * input's (next `__start__`), where a test of a run stopped mid-node needs
 * the node's.
 */
export function atNode<State extends Record<string, unknown>>(
  client: Client<State>,
  threadId: string,
  runId: string,
  node = "agent",
): Promise<void> {
  return until(async () => {
    const state = await client.threads.getState(threadId);
    return state.metadata?.run_id === runId && state.next.includes(node);
  });
}

/**
 * `promise`, or a rejection naming `what` once `ms` have passed. As
 * {@link until}'s, the bound only stops a wait for what never comes (a run
 * held until the test lets it go ends only when stopped): it measures
 * nothing, and fails sooner than the test's own timeout (60 s).
 */
export function settles<T>(promise: Promise<T>, what: string, ms = 30_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Not within ${ms / 1000} s: ${what}.`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * The calls a slow store or saver made take longer, by kind: `begun` once a
 * call's wait starts (a test's cue to act inside the window it opens, where
 * a fixed wait guessed when that was), `done` once the call has answered or
 * failed (the cue that what it wrote has landed).
 */
export class SlowCalls {
  begun = 0;
  done = 0;

  /** `work`, after `ms` (none when undefined; counted when not 0). */
  async run<T>(ms: number | undefined, work: () => Promise<T>): Promise<T> {
    if (ms === undefined) return work();
    const counted = ms > 0;
    if (counted) this.begun += 1;
    try {
      await sleep(ms);
      return await work();
    } finally {
      if (counted) this.done += 1;
    }
  }
}

/** A thread store whose writes can be made to take longer. */
export class SlowThreadStore extends IndexedDBThreadStore {
  /** How long a status write takes (`statusOf` chooses which statuses). */
  statusMs = 0;
  /** Which statuses `statusMs` applies to; all by default. */
  statusOf: (status: ThreadStatus) => boolean = () => true;
  /** How long a metadata write takes. */
  metadataMs = 0;
  /** How long the next `get` takes to answer, once it has read the record. */
  nextGetMs = 0;
  /** The slowed status writes, metadata writes and gets. */
  readonly slowed = { status: new SlowCalls(), metadata: new SlowCalls(), get: new SlowCalls() };

  override async patch(threadId: string, changes: { metadata?: Record<string, unknown>; status?: ThreadStatus }) {
    const statusMs = changes.status !== undefined && this.statusOf(changes.status) ? this.statusMs : undefined;
    const metadataMs = changes.metadata !== undefined ? this.metadataMs : undefined;
    return this.slowed.status.run(statusMs, () =>
      this.slowed.metadata.run(metadataMs, () => super.patch(threadId, changes)),
    );
  }

  override async get(threadId: string) {
    const ms = this.nextGetMs;
    this.nextGetMs = 0;
    const record = await super.get(threadId);
    return this.slowed.get.run(ms || undefined, async () => record);
  }
}

/** A saver whose `put`, `deleteForRuns` and `deleteThread` can be made to take longer. */
export class SlowSaver extends IndexedDBSaver {
  putMs = 0;
  rollbackMs = 0;
  deleteMs = 0;
  /** The slowed puts, rollbacks (`deleteForRuns`) and thread deletes. */
  readonly slowed = { put: new SlowCalls(), rollback: new SlowCalls(), delete: new SlowCalls() };

  override async put(...args: Parameters<IndexedDBSaver["put"]>) {
    return this.slowed.put.run(this.putMs || undefined, () => super.put(...args));
  }

  override async deleteForRuns(...args: Parameters<IndexedDBSaver["deleteForRuns"]>) {
    return this.slowed.rollback.run(this.rollbackMs || undefined, () => super.deleteForRuns(...args));
  }

  override async deleteThread(...args: Parameters<IndexedDBSaver["deleteThread"]>) {
    return this.slowed.delete.run(this.deleteMs || undefined, () => super.deleteThread(...args));
  }
}

/** A saver whose next `failures` thread deletes fail, as a database that refuses a write would. */
export class FailingDeleteSaver extends IndexedDBSaver {
  failures = 1;
  override async deleteThread(threadId: string): Promise<void> {
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error("the disk refused the delete");
    }
    await super.deleteThread(threadId);
  }
}

/** LangGraph's embed server needs a thread store: the one of its own tests, in memory. */
export function memoryThreads(): ThreadSaver {
  const threads = new Map<string, { thread_id: string; metadata: Record<string, unknown> }>();
  return {
    get: async (id) => threads.get(id)!,
    set: async (id, { kind, metadata }) => {
      const previous = threads.get(id)?.metadata ?? {};
      const thread = { thread_id: id, metadata: { ...(kind === "patch" ? previous : {}), ...metadata } };
      threads.set(id, thread);
      return thread;
    },
    delete: async (id) => void threads.delete(id),
  };
}

const frozen: (() => void)[] = [];

/**
 * Another tab's run that never answers (a tab frozen in the background):
 * its `running` record in the run log of `dbName`, its runner lock held,
 * and with `holdsThread` the thread's run lock too. Held until
 * {@link releaseFrozenTabs}.
 */
export async function frozenTabRun(dbName: string, threadId: string, holdsThread = false): Promise<void> {
  const runId = crypto.randomUUID();
  const log = new RunLog(openAgentDatabase(`${dbName}-agent-threads`, undefined));
  const now = new Date().toISOString();
  const record = { run_id: runId, thread_id: threadId, assistant_id: "agent", created_at: now, updated_at: now };
  await log.save({ ...record, status: "running", metadata: {}, multitask_strategy: "enqueue" }, []);
  await log.close();
  const names = [runnerLockName(dbName, runId), ...(holdsThread ? [runLockName(dbName, threadId)] : [])];
  for (const name of names) {
    void defaultLockManager().request(name, {}, () => new Promise<void>((release) => frozen.push(release)));
  }
}

/** Lets every {@link frozenTabRun} go (in an `afterEach`, before closing the servers). */
export function releaseFrozenTabs(): void {
  for (const release of frozen.splice(0)) release();
}
