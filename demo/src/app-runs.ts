/**
 * Starting runs on the open thread from the chat (send, retry, regenerate,
 * edit, approve, reject): the chat shows the run as it streams, and the
 * thread is read again when it ends. Functions of the {@link RunTarget}
 * they are given (the App is one), so the App keeps only its wiring.
 */
import type { ApprovalAnswer } from "./agent.js";
import { errorText } from "./errors.js";
import { RunNotStarted, type RunEvent } from "./runs.js";
import { QuestionAnsweredError, type Session } from "./session.js";
import type { Chat } from "./ui/chat.js";

/** What a run started from the page needs: read when events arrive, so always the current values. */
export interface RunTarget {
  readonly session: Session;
  readonly chat: Chat;
  /** The open thread. */
  readonly currentId: string;
  /** Set while an older checkpoint is on screen (read-only: no run starts, no event shows). */
  readonly viewing: { id: string } | undefined;
  /**
   * The text each thread's model step has streamed so far: a thread opened
   * again mid-answer shows all of it, not only what arrives after.
   */
  readonly streamed: Map<string, string>;
  /** Reads the open thread again and draws it. */
  refresh(): Promise<void>;
  /** Counts the thread's reads: a read overtaken by a later one (or by a run started here) draws nothing. */
  refreshSeq: number;
}

/**
 * A run starts: a read of the thread still in flight (the page's first, say)
 * would draw it as not running, without the message just sent, and undo the
 * Stop button until the run's first event. It draws nothing now: the run's
 * events draw the turn, and its end reads the thread again (afterRun).
 */
function overtakeReads(app: RunTarget): void {
  app.refreshSeq++;
}

/** A run's events, shown while its thread is open at the latest state. */
function eventsFor(app: RunTarget, threadId: string): (event: RunEvent) => void {
  return (event) => {
    if (event.kind === "token") app.streamed.set(threadId, (app.streamed.get(threadId) ?? "") + event.text);
    else app.streamed.delete(threadId);
    if (threadId !== app.currentId || app.viewing) return;
    if (event.kind === "token") app.chat.appendToken(event.text);
    // The step's checkpoint may still be in flight: drafts until the run ends and refresh() reads the saver.
    else app.chat.showMessages(event.messages, { draft: true });
  };
}

function afterRun(app: RunTarget, threadId: string, run: Promise<void>): void {
  run
    // The failure shows on the turn itself (refresh reads it), with Retry.
    .catch((error: unknown) => {
      if (!(error instanceof RunNotStarted)) console.warn("run failed:", errorText(error));
    })
    .finally(() => {
      app.streamed.delete(threadId);
      if (threadId === app.currentId) void app.refresh();
    });
}

/** Sends `text` on the open thread (not while viewing an older checkpoint). */
export function sendMessage(app: RunTarget, text: string): void {
  if (app.viewing) return;
  const id = app.currentId;
  app.chat.showError(undefined);
  app.chat.showApproval(undefined);
  app.chat.showProblem(undefined);
  app.chat.addPendingUser(text);
  overtakeReads(app);
  app.chat.setRunning(true);
  const run = app.session.send(id, text, eventsFor(app, id)).catch((error: unknown) => {
    // Stopped while it waited for another tab's answer: never sent, so the text goes back to the composer.
    if (error instanceof RunNotStarted && id === app.currentId) app.chat.restoreDraft(text);
    throw error;
  });
  afterRun(app, id, run);
}

/** Starts a run on the open thread (retry, regenerate, edit): the chat shows it as running until it ends. */
export function runOnCurrent(
  app: RunTarget,
  start: (threadId: string, events: (event: RunEvent) => void) => Promise<void>,
): void {
  if (app.viewing) return;
  const id = app.currentId;
  app.chat.showError(undefined);
  app.chat.showProblem(undefined);
  overtakeReads(app);
  app.chat.setRunning(true);
  afterRun(app, id, start(id, eventsFor(app, id)));
}

/**
 * Answers the approval card of the open thread: its question `questionId`.
 * One answered meanwhile in another tab is not answered again: the chat says so.
 */
export function decide(app: RunTarget, answer: ApprovalAnswer, questionId: string | undefined): void {
  const id = app.currentId;
  // The composer was disabled while the card waited: enable it first, so the focus can go back to it
  // (not on a phone: there the conversation takes it, and no keyboard opens unasked).
  app.chat.setDisabled(undefined);
  app.chat.showApproval(undefined);
  app.chat.focusNext();
  overtakeReads(app);
  app.chat.setRunning(true);
  const run = app.session.answer(id, answer, eventsFor(app, id), questionId).catch((error: unknown) => {
    if (error instanceof QuestionAnsweredError && id === app.currentId) app.chat.showError(error.message);
    throw error;
  });
  afterRun(app, id, run);
}
