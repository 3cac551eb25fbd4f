/**
 * The session's runs from a point in a thread's past: a new answer in place
 * of the last one, an edited message, an approval card's answer, a fork.
 * Each forks (or resumes) a checkpoint, then runs; the session queues them
 * per thread (runs.ts) and gives them its `run`.
 */
import { HumanMessage } from "@langchain/core/messages";
import { Command, isUnknownInterruptError, type StateSnapshot } from "@langchain/langgraph/web";
import { APPROVAL_NODE, pendingQuestionId, stamped, type Agent, type ApprovalAnswer } from "./agent.js";
import type { RunInput } from "./runs.js";
import {
  checkpointBefore,
  checkpointBeforeAnswer,
  firstQuestion,
  followFirstQuestion,
  lastAnswer,
  messagesOf,
} from "./session-threads.js";
import type { Vault } from "./settings.js";
import type { DemoDB } from "./threads-db.js";

/** An approval card's question was answered meanwhile (in another tab): this answer was not given to any question. */
export class QuestionAnsweredError extends Error {
  override name = "QuestionAnsweredError";
  constructor() {
    super("This question was already answered (in another tab?): your answer was not saved. Here is the thread now.");
  }
}

/** What these runs need of the session (the Session is one). */
export interface TurnHost {
  readonly agent: Agent;
  readonly db: DemoDB;
  readonly vault: Vault;
  config(threadId: string, checkpointId?: string): Parameters<Agent["updateState"]>[0];
  state(threadId: string, checkpointId?: string): Promise<StateSnapshot>;
}

/** Runs the thread from its latest checkpoint, or from `checkpointId`, with `input`. */
export type RunFrom = (input: RunInput, checkpointId?: string) => Promise<void>;

/**
 * A new answer in place of the last one: a fork of the checkpoint before
 * the model's final step of the turn, run from there. Only that step runs
 * again: a memory saved earlier in the turn is not asked for (or saved)
 * again. Running from the old checkpoint itself would not do: LangGraph
 * reuses a task's saved writes, so the "new" answer would be the old one;
 * the fork has none. The old answer stays on its own branch.
 */
export async function regenerateAnswer(host: TurnHost, threadId: string, run: RunFrom): Promise<void> {
  const messages = messagesOf(await host.state(threadId));
  const answer = lastAnswer(messages);
  if (answer < 0) return;
  const before = await checkpointBeforeAnswer((id, at) => host.state(id, at), threadId, answer);
  await host.agent.updateState(host.config(threadId, before), { messages: [] });
  await run(null);
}

/**
 * Edits the user message at `index`: a fork of the checkpoint before it
 * (the state with the `index` messages before it), so the conversation
 * continues from the edited message and the original stays on its branch.
 */
export async function editMessage(
  host: TurnHost,
  threadId: string,
  index: number,
  text: string,
  run: RunFrom,
): Promise<void> {
  const before = await checkpointBefore((id, at) => host.state(id, at), threadId, index);
  const shown = messagesOf(await host.state(threadId));
  const input = stamped(new HumanMessage(text));
  // Retitled before the answer: the new branch starts with `input` as soon as the run does.
  const now = firstQuestion([...shown.slice(0, index), input]);
  await followFirstQuestion(host.db, host.vault, threadId, firstQuestion(shown), now);
  await run({ messages: [input] }, before);
}

/**
 * Answers the paused save_memory question `questionId` (its interrupt id,
 * see `pendingQuestionId`) with `Command({ resume: { [questionId]: answer } })`:
 * a card drawn before another tab answered its question cannot answer the
 * question asked since (it throws {@link QuestionAnsweredError}, nothing
 * written). A thread paused by the earlier demo's breakpoint (before
 * `tools`, no question yet, so no id) takes a plain `Command({ resume })`:
 * LangGraph hands a resume without a pending question to the first one the
 * node asks. `refused`: the run was refused (not failed) by LangGraph.
 */
export async function answerQuestion(
  host: TurnHost,
  threadId: string,
  answer: ApprovalAnswer,
  questionId: string | undefined,
  run: RunFrom,
  refused: () => void,
): Promise<void> {
  const state = await host.state(threadId);
  if (questionId !== undefined && pendingQuestionId(state) !== questionId) throw new QuestionAnsweredError();
  if (!state.next.includes(APPROVAL_NODE)) return;
  const resume = questionId === undefined ? answer : { [questionId]: answer };
  try {
    await run(new Command({ resume }));
  } catch (error) {
    // Answered by another tab while this answer waited for the thread: LangGraph's strict resume refused it.
    if (!isUnknownInterruptError(error)) throw error;
    refused();
    throw new QuestionAnsweredError();
  }
}

/**
 * Forks: a new checkpoint whose parent is `checkpointId`, with that
 * checkpoint's state. It becomes the thread's latest, so the conversation
 * continues there; the old branch stays in the history.
 *
 * A fork of a checkpoint paused for approval has the pause's next step but
 * not its question (a pending write of the old checkpoint, which the fork
 * does not copy): its card had no id, and answered whatever question was
 * pending when it ran. The `tools` node runs on the fork until it asks
 * again (it asks before it saves anything), so the fork's card answers
 * its own question by id, as the original's does.
 */
export async function forkAt(host: TurnHost, threadId: string, checkpointId: string, run: RunFrom): Promise<void> {
  const was = firstQuestion(messagesOf(await host.state(threadId)));
  await host.agent.updateState(host.config(threadId, checkpointId), { messages: [] });
  const forked = await host.state(threadId);
  if (forked.next.includes(APPROVAL_NODE) && pendingQuestionId(forked) === undefined) await run(null);
  const now = firstQuestion(messagesOf(await host.state(threadId, checkpointId)));
  await followFirstQuestion(host.db, host.vault, threadId, was, now);
}
