/**
 * A session's reads and bookkeeping of threads that need no run: the
 * history's paged read, finding the checkpoint an edit forks from, sidebar
 * rows for threads that arrive in the saver (import, sync), and their titles
 * (which follow the first message of the branch a thread shows).
 * Functions of the saver, the demo's database and the vault they are given,
 * so `Session` stays a thin facade over them.
 */
import type { BaseMessage } from "@langchain/core/messages";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { MemorySaver, type StateSnapshot } from "@langchain/langgraph/web";
import { ulid } from "ulid";
import { importThread, type IndexedDBSaver } from "./lib.js";
import { titlePlace, type Vault } from "./settings.js";
import type { DemoDB } from "./threads-db.js";

/** Checkpoints in the history's first read (about four turns). */
const FIRST_PAGE = 12;

/** Reads a thread's state: the latest, or at one checkpoint. */
export type ReadState = (threadId: string, checkpointId?: string) => Promise<StateSnapshot>;

/** A thread's title from its first message. */
export function titleFrom(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 48 ? `${line.slice(0, 47)}…` : line || "New thread";
}

/** The messages of a state (none before the first turn). */
export function messagesOf(snapshot: StateSnapshot): BaseMessage[] {
  return (snapshot.values.messages ?? []) as BaseMessage[];
}

/** The text of the conversation's first user message (undefined before the first turn). */
export function firstQuestion(messages: BaseMessage[]): string | undefined {
  const first = messages.find((m) => m.getType() === "human");
  return first && String(first.content);
}

/**
 * Keeps a thread's title on the branch it shows. A title is its first
 * message's (titleFrom) until the user renames the thread; when an edit of
 * that message, or a switch or fork to another branch, changes the first
 * message from `was` to `now`, a title still made from `was` follows to
 * `now`, and a name the user gave stays.
 */
export async function followFirstQuestion(
  db: DemoDB,
  vault: Vault,
  threadId: string,
  was: string | undefined,
  now: string | undefined,
): Promise<void> {
  if (was === undefined || now === undefined || titleFrom(was) === titleFrom(now)) return;
  const row = await db.threads.get(threadId);
  if (!row) return;
  const title = await vault.open(row.title, titlePlace(threadId)).catch(() => undefined);
  if (title !== titleFrom(was)) return;
  await db.threads.update(threadId, { title: await vault.seal(titleFrom(now), titlePlace(threadId)) });
}

/**
 * Every checkpoint of the thread's root namespace, every branch, newest
 * first, as the saver pages them in (raw tuples: no state is rebuilt).
 */
export async function* timeline(saver: IndexedDBSaver, threadId: string): AsyncGenerator<CheckpointTuple> {
  const config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  // A small first read, so the newest rows show at once; then the rest, older than it.
  let last: CheckpointTuple | undefined;
  for await (const tuple of saver.list(config, { limit: FIRST_PAGE })) yield (last = tuple);
  if (!last) return;
  yield* saver.list(config, { before: last.config });
}

/** The index of the turn's answer (its last message, from the agent), or -1 when the turn has none. */
export function lastAnswer(messages: BaseMessage[]): number {
  const last = messages.length - 1;
  return last >= 0 && messages[last]!.getType() === "ai" ? last : -1;
}

/**
 * The newest ancestor of the latest state (itself included) that `match`
 * takes, walking the parents until `past` says the walk went too far.
 */
async function findAncestor(
  state: ReadState,
  threadId: string,
  match: (snapshot: StateSnapshot) => boolean,
  past: (snapshot: StateSnapshot) => boolean,
): Promise<string | undefined> {
  let snapshot: StateSnapshot | undefined = await state(threadId);
  while (snapshot && !past(snapshot)) {
    if (match(snapshot)) return snapshot.config.configurable?.checkpoint_id as string;
    const parent = snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined;
    snapshot = parent ? await state(threadId, parent) : undefined;
  }
  return undefined;
}

/**
 * The checkpoint an edit of the user message at `index` forks from: the
 * newest state with exactly the `index` messages before it that was waiting
 * for input, found by walking the parents from the latest.
 */
export async function checkpointBefore(state: ReadState, threadId: string, index: number): Promise<string> {
  let snapshot: StateSnapshot | undefined = await state(threadId);
  let before: StateSnapshot | undefined;
  while (snapshot) {
    const count = messagesOf(snapshot).length;
    if (count === index && !snapshot.next.includes("agent")) {
      before = snapshot;
      if (snapshot.next.length === 0) break;
    }
    if (count < index) break;
    const parent = snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined;
    snapshot = parent ? await state(threadId, parent) : undefined;
  }
  if (!before) throw new Error("Could not find the checkpoint before this message.");
  return before.config.configurable?.checkpoint_id as string;
}

/**
 * The checkpoint a new answer forks from: the newest state with the `count`
 * messages before the answer, where the model's step was due (after a tool's
 * result, or after the question). Running from there asks the model again and
 * nothing else: a memory approved in that turn is not asked for again.
 */
export async function checkpointBeforeAnswer(state: ReadState, threadId: string, count: number): Promise<string> {
  const found = await findAncestor(
    state,
    threadId,
    (snapshot) => messagesOf(snapshot).length === count && snapshot.next.includes("agent"),
    (snapshot) => messagesOf(snapshot).length < count,
  );
  if (!found) throw new Error("Could not find the checkpoint before this answer.");
  return found;
}

/** The Web Lock an import holds from its look for the file's conversation to its sidebar row (per saver). */
const IMPORT_LOCK = "langgraph-demo:import";

/** What an import did: the thread it wrote, or the one already holding the file's conversation. */
export interface ImportOutcome {
  threadId: string;
  /** True when nothing was imported: `threadId` already holds the file's latest checkpoint. */
  alreadyHere: boolean;
}

/**
 * Imports a thread file under a new id, with a sidebar row titled from it.
 * A file whose conversation is here already (a thread holds its latest
 * checkpoint: the same file imported twice, or exported from this browser,
 * the thread maybe gone on since) is not imported again, unless `copy` asks
 * for a copy: importing twice made a second thread, unsaid.
 */
export async function importThreadFile(
  db: DemoDB,
  vault: Vault,
  saver: IndexedDBSaver,
  state: ReadState,
  file: Blob,
  fileName: string,
  copy = false,
): Promise<ImportOutcome> {
  // One import at a time across the app's tabs: two tabs importing the same file at once both looked for
  // it before either wrote it, and made two threads. The look and the write are one step under the lock.
  return navigator.locks.request(`${IMPORT_LOCK}:${saver.dbName}`, async () => {
    if (!copy) {
      const holder = await threadHolding(saver, file);
      if (holder !== undefined) return { threadId: holder, alreadyHere: true };
    }
    const threadId = ulid();
    await importThread(saver, file, { targetThreadId: threadId });
    const first = firstQuestion(messagesOf(await state(threadId)));
    const title = first !== undefined ? titleFrom(first) : fileName.replace(/\.[^.]+$/, "");
    await db.touch(threadId, () => vault.seal(`${title} (imported)`, titlePlace(threadId)));
    return { threadId, alreadyHere: false };
  });
}

/**
 * The thread of `saver` that holds the file's latest root checkpoint (by its
 * id, which an import keeps), if any. The file is read into a memory saver
 * first: the same reading and checks as the import, nothing written here.
 */
async function threadHolding(saver: IndexedDBSaver, file: Blob): Promise<string | undefined> {
  const probe = new MemorySaver();
  // Under an id of its own, as the import writes it: the file's own id may be one a saver refuses.
  await importThread(probe, file, { targetThreadId: "probe" });
  const latest = await probe.getTuple({ configurable: { thread_id: "probe", checkpoint_ns: "" } });
  const head = latest?.config.configurable?.checkpoint_id as string | undefined;
  if (head === undefined) return undefined;
  for await (const thread of saver.listThreads({ count: false })) {
    const config = { configurable: { thread_id: thread.threadId, checkpoint_ns: "", checkpoint_id: head } };
    if (await saver.getTuple(config)) return thread.threadId;
  }
  return undefined;
}

/** Threads in the saver without a sidebar row (imported elsewhere, or a row lost): list them. */
export async function adoptUnlistedThreads(
  db: DemoDB,
  vault: Vault,
  saver: IndexedDBSaver,
  state: ReadState,
): Promise<void> {
  const known = new Set(await db.threads.toCollection().primaryKeys());
  // Without counts: none is shown, and each would walk its thread's rows at every start.
  for await (const thread of saver.listThreads({ count: false })) {
    if (known.has(thread.threadId)) continue;
    const first = firstQuestion(messagesOf(await state(thread.threadId)));
    await db.touch(
      thread.threadId,
      () => vault.seal(first !== undefined ? titleFrom(first) : "Untitled", titlePlace(thread.threadId)),
      thread.updatedAt,
    );
  }
}
