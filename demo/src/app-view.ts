/**
 * Drawing the open thread: reading its state (the latest, or the older
 * checkpoint on view) into the chat, with the turn's problem, the approval
 * card and the composer's state; then, once the page is idle, the branch
 * switchers from the thread's checkpoint tree. Functions of the
 * {@link ViewHost} they are given (the App is one).
 */
import type { BaseMessage } from "@langchain/core/messages";
import { APPROVAL_NODE, pendingApproval, pendingQuestionId } from "./agent.js";
import { refreshHistory, type HistoryHost } from "./app-history.js";
import type { CardEdits, MessageEdit } from "./drafts.js";
import { messageOf } from "./errors.js";
import { isThreadRunning } from "./lib.js";
import { branchSwitcher } from "./ui/messages.js";

/** The conversation on screen at the latest state, idle: where branch switchers may go. */
export interface Shown {
  seq: number;
  id: string;
  messages: BaseMessage[];
}

/** What drawing the open thread needs of the app; read at each use, so always the current values. */
export interface ViewHost extends HistoryHost {
  /** The text each running thread's model step has streamed so far. */
  readonly streamed: Map<string, string>;
  /** Counts the reads of the open thread: one overtaken by a newer read draws nothing. */
  refreshSeq: number;
  /** Another tab is running the open thread: its turn in flight is not "cut short". */
  readonly busyElsewhere: boolean;
  /** The conversation last shown at the latest state, idle. */
  shown: Shown | undefined;
  /** What was typed in the thread's approval card for `questionId` before a reload, if anything. */
  keptCard(threadId: string, questionId: string | undefined): Promise<CardEdits | undefined>;
  /** The message editor open on the thread before a reload, if any. */
  keptEdit(threadId: string): Promise<MessageEdit | undefined>;
}

/** Resolves when the page is idle (Safari has no requestIdleCallback: a short timer there). */
function whenIdle(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestIdleCallback === "function") requestIdleCallback(() => resolve(), { timeout: 1_000 });
    else setTimeout(resolve, 50);
  });
}

/** Reads the open thread (at the checkpoint on view, if any) and draws it. */
export async function refreshView(app: ViewHost): Promise<void> {
  const seq = ++app.refreshSeq;
  const id = app.currentId;
  try {
    const snapshot = await app.session.state(id, app.viewing?.id);
    if (seq !== app.refreshSeq) return;
    const messages = ((snapshot.values as { messages?: BaseMessage[] }).messages ?? []) as BaseMessage[];
    const running = app.session.isRunning(id);
    const paused = !app.viewing && snapshot.next.includes(APPROVAL_NODE);
    const questionId = pendingQuestionId(snapshot);
    const interactive = !app.viewing && !running && !paused;
    // Read before anything is drawn: a card drawn first would show the proposal, then jump to the edits.
    const kept = paused ? await app.keptCard(id, questionId) : undefined;
    const reopen = interactive ? await app.keptEdit(id) : undefined;
    const waiting = running || (paused && questionId === undefined && (await askingElsewhere(app, id)));
    if (seq !== app.refreshSeq) return;
    app.chat.setRunning(running && !app.viewing);
    app.chat.showMessages(messages, { interactive, reopen, past: Boolean(app.viewing) });
    // Opened again mid-answer: everything streamed so far, then the rest as it comes.
    const streamed = running && !app.viewing && app.streamed.get(id);
    if (streamed) app.chat.appendToken(streamed);
    if (interactive) void showBranches(app, seq, id, messages);
    // A turn another tab is answering still has steps due: not a problem, and Retry would answer it twice.
    const problem = app.viewing || app.busyElsewhere ? undefined : app.session.problem(id, snapshot);
    app.chat.showProblem(problem);
    app.chat.showApproval(paused ? pendingApproval(messages) : undefined, waiting, questionId, kept);
    app.chat.showViewing(app.viewing && { step: snapshot.metadata?.step ?? 0, messageCount: messages.length });
    // Held for another tab's question: "approve or reject first" would ask for what the card cannot do yet.
    const disabled = paused && waiting && !running ? "asking-elsewhere" : paused ? "approval" : undefined;
    app.chat.setDisabled(app.viewing ? "viewing" : disabled);
    if (app.historyOpen) await refreshHistory(app);
  } catch (error) {
    if (seq === app.refreshSeq) app.chat.showError(`Could not read the thread: ${messageOf(error)}`);
  }
}

/**
 * Whether a run of another tab holds the thread, paused with no question: that run is between its model
 * step and the approval step's question, and the card waits for the question (its id, and what it asks).
 * Asked of the lock manager, not only `busyElsewhere`: the watch of a thread just opened has not answered
 * yet. With no run anywhere, a pause without a question is the earlier demo's breakpoint (or a run cut short
 * before it asked): its card answers it, as the first question the step asks.
 */
async function askingElsewhere(app: ViewHost, threadId: string): Promise<boolean> {
  return app.busyElsewhere || (await isThreadRunning(threadId, { dbName: app.session.saver.dbName }));
}

/**
 * Adds the branch switchers once the thread's tree is read: after the
 * messages, so a long thread shows at once (only a thread with branches is drawn again).
 */
async function showBranches(app: ViewHost, seq: number, id: string, messages: BaseMessage[]): Promise<void> {
  app.shown = { seq, id, messages };
  // With History open, its own read of the whole thread feeds the cache (see app-history.ts): one read, not two.
  if (app.historyOpen) return;
  const stale = () => seq !== app.refreshSeq || app.historyOpen;
  try {
    // When the page is idle: the conversation and the History panel come first.
    await whenIdle();
    if (stale() || !(await app.branches.update(id, stale))) return;
    drawBranches(app);
  } catch (error) {
    // The conversation is shown already; only the switchers are missing.
    console.warn("branches", error);
  }
}

/** Draws the switchers of the conversation last shown, from the cache, if it has branches. */
export function drawBranches(app: ViewHost): void {
  const shown = app.shown;
  if (!shown || shown.seq !== app.refreshSeq) return;
  const { id, messages } = shown;
  const switchers = new Map(
    app.branches
      .points(id)
      .filter((point) => point.messageIndex < messages.length)
      .map((point) => [point.messageIndex, branchSwitcher(point, (head) => void switchBranch(app, head))]),
  );
  if (switchers.size) app.chat.showMessages(messages, { interactive: true, branches: switchers });
}

/** Continues the conversation on another branch: a fork of its newest checkpoint becomes the latest. */
async function switchBranch(app: ViewHost, headId: string): Promise<void> {
  try {
    await app.session.fork(app.currentId, headId);
    await app.refresh();
  } catch (error) {
    app.chat.showError(`Could not switch to that version: ${messageOf(error)}`);
  }
}
