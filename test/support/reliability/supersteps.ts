/**
 * Concurrent writers for the reliability tests: a real LangGraph graph that
 * runs a given number of supersteps on an IndexedDBSaver while every `put` and
 * `putWrites` it makes is recorded, a checker that each recorded checkpoint
 * and write can be read back exactly, and a watcher that keeps calling `list`
 * while writers run and checks every answer is consistent. Used in one page
 * (Node and Chromium) and inside same-origin iframes (two "pages").
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph/web";
import type { CheckpointTuple, PendingWrite } from "@langchain/langgraph-checkpoint";
import type { IndexedDBSaver } from "../../../src/saver/index.js";

/** One `put` as the graph made it. */
export interface RecordedPut {
  threadId: string;
  checkpointNs: string;
  checkpointId: string;
  parentId?: string;
  values: unknown;
  step: number;
}

/** One `putWrites` as the graph made it. */
export interface RecordedWrites {
  threadId: string;
  checkpointNs: string;
  checkpointId: string;
  taskId: string;
  writes: PendingWrite[];
}

export interface Recorded {
  puts: RecordedPut[];
  writes: RecordedWrites[];
}

/** Plain data (what a reader gets back from any saver). */
const plain = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * JSON with every object's keys sorted: values compare equal whatever order
 * their keys come in. A checkpoint's `channel_values` has no promised order
 * (a value read back may come from the row, a blob row or memory), and a
 * check comparing plain JSON once failed on the same values in another order.
 */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/** Records every put and putWrites of `saver` (this instance only) into `into`. */
export function record(saver: IndexedDBSaver, into: Recorded = { puts: [], writes: [] }): Recorded {
  const put = saver.put.bind(saver);
  const putWrites = saver.putWrites.bind(saver);
  saver.put = (config, checkpoint, metadata, newVersions) => {
    into.puts.push({
      threadId: config.configurable!.thread_id,
      checkpointNs: config.configurable!.checkpoint_ns ?? "",
      checkpointId: checkpoint.id,
      parentId: config.configurable!.checkpoint_id,
      // A saver that stores values per version (this one, Postgres) keeps the
      // channels that have a version; LangGraph also hands over unversioned defaults.
      values: plain(
        Object.fromEntries(
          Object.entries(checkpoint.channel_values).filter(([channel]) => channel in checkpoint.channel_versions),
        ),
      ),
      step: metadata.step,
    });
    return put(config, checkpoint, metadata, newVersions);
  };
  saver.putWrites = (config, writes, taskId, taskPath) => {
    into.writes.push({
      threadId: config.configurable!.thread_id,
      checkpointNs: config.configurable!.checkpoint_ns ?? "",
      checkpointId: config.configurable!.checkpoint_id,
      taskId,
      writes: plain(writes),
    });
    return putWrites(config, writes, taskId, taskPath);
  };
  return into;
}

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  last: Annotation<string>(),
});

/**
 * A graph whose `tick` node runs `steps` times (one superstep each), whoever
 * else writes the thread: the loop counts in a closure, not in the state.
 */
export function tickGraph(saver: IndexedDBSaver, label: string, steps: number) {
  let ticks = 0;
  return new StateGraph(State)
    .addNode("tick", async () => {
      ticks += 1;
      return { count: 1, last: `${label}-${ticks}` };
    })
    .addEdge(START, "tick")
    .addConditionalEdges("tick", () => (ticks < steps ? "tick" : END))
    .compile({ checkpointer: saver });
}

/** Runs `steps` supersteps of {@link tickGraph} on `threadId`, recording what was stored into `recorded` as it goes. */
export async function runSupersteps(
  saver: IndexedDBSaver,
  threadId: string,
  label: string,
  steps: number,
  recorded: Recorded = { puts: [], writes: [] },
): Promise<Recorded> {
  record(saver, recorded);
  const config: RunnableConfig = { configurable: { thread_id: threadId }, recursionLimit: steps + 10 };
  await tickGraph(saver, label, steps).invoke({ count: 0, last: `${label}-start` }, config);
  return recorded;
}

async function collect(iterable: AsyncIterable<CheckpointTuple>): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = [];
  for await (const tuple of iterable) out.push(tuple);
  return out;
}

/** A problem found, or undefined. */
type Problem = string | undefined;

/**
 * Checks one `list` answer of one thread: newest first without repeats, every
 * parent present (a parent commits before its child, and `list` reads older
 * pages later), and every checkpoint's values and writes as recorded.
 */
export function checkListAnswer(tuples: CheckpointTuple[], recorded: Recorded[], complete = true): Problem {
  const puts = new Map(recorded.flatMap((r) => r.puts).map((p) => [`${p.threadId}\u0000${p.checkpointId}`, p]));
  const ids = tuples.map((t) => t.checkpoint.id);
  for (let i = 1; i < ids.length; i++)
    if (!(ids[i - 1]! > ids[i]!)) return `list is not strictly newest first at ${i}: ${ids[i - 1]} then ${ids[i]}`;
  const seen = new Set(ids);
  for (const tuple of tuples) {
    const thread = tuple.config.configurable?.thread_id as string;
    const put = puts.get(`${thread}\u0000${tuple.checkpoint.id}`);
    if (!put) return `list shows checkpoint ${tuple.checkpoint.id} of ${thread} that nobody put`;
    const parent = tuple.parentConfig?.configurable?.checkpoint_id;
    if (parent !== put.parentId) return `checkpoint ${put.checkpointId}: parent ${parent}, put with ${put.parentId}`;
    const beyond = !complete && parent !== undefined && parent < ids[ids.length - 1]!;
    if (parent !== undefined && !beyond && !seen.has(parent))
      return `checkpoint ${put.checkpointId} is listed without its parent ${parent}`;
    if (canonical(tuple.checkpoint.channel_values) !== canonical(put.values)) {
      return `checkpoint ${put.checkpointId}: values ${JSON.stringify(tuple.checkpoint.channel_values)}, put ${JSON.stringify(put.values)}`;
    }
  }
  return undefined;
}

/**
 * Keeps listing `threadIds` (every `pauseMs`; the newest 20, and every fifth
 * time the whole thread) until `done` settles; returns how many lists ran and
 * the first problem found.
 */
export async function watchLists(
  saver: IndexedDBSaver,
  threadIds: string[],
  recorded: Recorded[],
  done: Promise<unknown>,
  pauseMs = 20,
): Promise<{ lists: number; problem: Problem }> {
  let finished = false;
  void done.then(
    () => (finished = true),
    () => (finished = true),
  );
  let lists = 0;
  while (!finished) {
    for (const threadId of threadIds) {
      // Mostly the newest page (what a UI shows), every fifth time the whole thread.
      const complete = lists % 5 === 0;
      const options = complete ? {} : { limit: 20 };
      const problem = checkListAnswer(
        await collect(saver.list({ configurable: { thread_id: threadId } }, options)),
        recorded,
        complete,
      );
      lists += 1;
      if (problem) return { lists, problem };
    }
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return { lists, problem: undefined };
}

/**
 * After the writers: `list` of each thread holds exactly the recorded
 * checkpoints, each with its recorded values, parent, step and every recorded
 * write; `getTuple` reads a sample of them (and the latest) the same; and
 * `listThreads` names each thread's newest root checkpoint.
 */
export async function checkEverything(saver: IndexedDBSaver, recorded: Recorded[], sample = 25): Promise<Problem> {
  const puts = recorded.flatMap((r) => r.puts);
  const byId = new Map(puts.map((p) => [`${p.threadId}\u0000${p.checkpointId}`, p]));
  const writesOf = new Map<string, RecordedWrites[]>();
  for (const batch of recorded.flatMap((r) => r.writes)) {
    const key = `${batch.threadId}\u0000${batch.checkpointId}`;
    writesOf.set(key, [...(writesOf.get(key) ?? []), batch]);
  }
  const same = (tuple: CheckpointTuple, put: RecordedPut): Problem => {
    if (canonical(tuple.checkpoint.channel_values) !== canonical(put.values))
      return `checkpoint ${put.checkpointId} reads back different values`;
    if (tuple.metadata?.step !== put.step)
      return `checkpoint ${put.checkpointId} reads back step ${tuple.metadata?.step}, put ${put.step}`;
    if (tuple.parentConfig?.configurable?.checkpoint_id !== put.parentId)
      return `checkpoint ${put.checkpointId} reads back another parent`;
    for (const batch of writesOf.get(`${put.threadId}\u0000${put.checkpointId}`) ?? []) {
      for (const [channel, value] of batch.writes) {
        const found = tuple.pendingWrites?.some(
          ([taskId, c, v]) => taskId === batch.taskId && c === channel && canonical(v) === canonical(value),
        );
        if (!found) return `lost write ${channel} of task ${batch.taskId} on ${put.checkpointId}`;
      }
    }
    return undefined;
  };
  const threads = [...new Set(puts.map((p) => p.threadId))];
  const latest = new Map<string, string>();
  for (const threadId of threads) {
    const tuples = await collect(saver.list({ configurable: { thread_id: threadId } }));
    const problem = checkListAnswer(tuples, recorded);
    if (problem) return problem;
    const want = puts
      .filter((p) => p.threadId === threadId)
      .map((p) => p.checkpointId)
      .sort()
      .reverse();
    const got = tuples.map((t) => t.checkpoint.id);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      const lost = want.filter((id) => !got.includes(id));
      return `list of ${threadId} holds ${got.length} checkpoints, ${want.length} were put; lost: ${lost.slice(0, 3).join(", ")}`;
    }
    for (const tuple of tuples) {
      const found = same(tuple, byId.get(`${threadId}\u0000${tuple.checkpoint.id}`)!);
      if (found) return `list: ${found}`;
    }
    // Writes aimed at checkpoints of this thread: all of them exist.
    for (const batch of recorded.flatMap((r) => r.writes)) {
      if (batch.threadId === threadId && !got.includes(batch.checkpointId))
        return `writes of ${batch.taskId} point at missing checkpoint ${batch.checkpointId}`;
    }
    latest.set(threadId, want[0]!);
  }
  const step = Math.max(1, Math.floor(puts.length / sample));
  for (let i = 0; i < puts.length; i += step) {
    const put = puts[i]!;
    const tuple = await saver.getTuple({
      configurable: { thread_id: put.threadId, checkpoint_ns: put.checkpointNs, checkpoint_id: put.checkpointId },
    });
    if (!tuple) return `getTuple lost checkpoint ${put.checkpointId} of ${put.threadId} (step ${put.step})`;
    const found = same(tuple, put);
    if (found) return `getTuple: ${found}`;
  }
  for (const [threadId, id] of latest) {
    const tuple = await saver.getTuple({ configurable: { thread_id: threadId } });
    if (tuple?.checkpoint.id !== id) return `getTuple's latest of ${threadId} is ${tuple?.checkpoint.id}, not ${id}`;
  }
  for await (const info of saver.listThreads()) {
    if (latest.has(info.threadId) && info.latestCheckpointId !== latest.get(info.threadId)) {
      return `listThreads says the latest of ${info.threadId} is ${info.latestCheckpointId}, but it is ${latest.get(info.threadId)}`;
    }
    latest.delete(info.threadId);
  }
  if (latest.size > 0) return `listThreads misses ${[...latest.keys()].join(", ")}`;
  return undefined;
}
