/**
 * The History panel's behaviour, apart from the App: showing and hiding it,
 * reading the saver's checkpoints into it as they stream in (redraws paced,
 * since each rebuilds the whole panel), and time travel from it (view an
 * older checkpoint, fork from it). Functions of the {@link HistoryHost} they
 * are given (the App is one).
 */
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { BranchCache } from "./branches.js";
import { messageOf } from "./errors.js";
import type { Session } from "./session.js";
import { countMessages, rowOf, type Row } from "./timeline.js";
import type { Chat } from "./ui/chat.js";
import { phoneScreen } from "./ui/dom.js";
import type { createHistory } from "./ui/history.js";

/** What the History panel needs of the app; read at each use, so always the current values. */
export interface HistoryHost {
  readonly session: Session;
  readonly chat: Chat;
  readonly history: ReturnType<typeof createHistory>;
  readonly shell: { readonly historyButton: HTMLElement };
  /** The open thread's checkpoint tree: a complete read of the history feeds it. */
  readonly branches: BranchCache;
  /** The open thread. */
  readonly currentId: string;
  /** The older checkpoint on screen, if any. */
  viewing: { id: string } | undefined;
  historyOpen: boolean;
  /** The rows last drawn in the panel, newest first. */
  rows: Row[];
  /** Counts the panel's reads: one overtaken by a newer read stops. */
  historyReads: number;
  /** Reads the open thread again and draws it. */
  refresh(): Promise<void>;
  /** Draws the branch switchers from the cache. */
  drawBranches(): void;
}

/**
 * While the history streams in, it is redrawn at most this often (ms), after
 * its first rows: each redraw rebuilds the whole panel, so on a 300-turn
 * thread (read in well under a second) redraws every 250 ms cost more than the
 * final one.
 */
const DRAW_EVERY = 1_000;

/**
 * Reads `tuples` into rows, calling `draw(rows, false)` at the next animation
 * frame after the first rows and then at most every {@link DRAW_EVERY} ms,
 * and `draw(rows, true)` once all are read. `draw` returns whether it drew
 * (a read overtaken by another draws nothing). A read `stale()` says is
 * overtaken stops without its last draw.
 */
async function streamHistory(
  tuples: AsyncIterable<CheckpointTuple>,
  stale: () => boolean,
  draw: (rows: Row[], complete: boolean) => boolean,
): Promise<void> {
  const rows: Row[] = [];
  let frame = 0;
  let drawnAt = 0;
  const drawNow = (complete: boolean) => {
    frame = 0;
    const at = performance.now();
    if (draw(rows, complete)) drawnAt = at;
  };
  try {
    for await (const tuple of tuples) {
      if (stale()) return;
      rows.push(rowOf(tuple));
      // The first rows at the next frame, then a redraw at most every DRAW_EVERY ms: each one redraws the panel.
      if (!frame && (drawnAt === 0 || performance.now() - drawnAt > DRAW_EVERY))
        frame = requestAnimationFrame(() => drawNow(false));
    }
  } finally {
    cancelAnimationFrame(frame);
  }
  drawNow(true);
}

/** Opens or closes the panel; closing it goes back to the latest state. */
export function toggleHistory(app: HistoryHost, open: boolean): void {
  showHistoryPanel(app, open);
  if (open) void refreshHistory(app);
  else if (app.viewing) void viewCheckpoint(app, undefined);
}

/** Shows or hides the panel only (a phone hides it to show the selected state). */
export function showHistoryPanel(app: HistoryHost, open: boolean): void {
  // Focus inside a panel that goes away would fall to the page: it goes back to the History button.
  const button = app.shell.historyButton;
  const hadFocus = !open && app.history.el.contains(document.activeElement);
  app.historyOpen = open;
  app.history.el.hidden = !open;
  if (hadFocus) button.focus();
  button.setAttribute("aria-expanded", String(open));
  button.classList.toggle("active", open);
}

/** Reads the history and draws it as it streams in, so the newest turns show at once on a long thread. */
export async function refreshHistory(app: HistoryHost): Promise<void> {
  const seq = ++app.historyReads;
  const id = app.currentId;
  await streamHistory(
    app.session.timeline(id),
    () => seq !== app.historyReads,
    (rows, complete) => {
      if (seq !== app.historyReads || id !== app.currentId) return false;
      app.rows = rows;
      if (complete) countMessages(rows);
      app.history.render(rows, app.viewing?.id, complete);
      if (complete) {
        app.branches.adopt(id, rows);
        app.drawBranches();
      }
      return true;
    },
  );
}

/** Shows the state at a checkpoint (undefined: back to the latest); resolves once it is drawn. */
export function viewCheckpoint(app: HistoryHost, checkpointId: string | undefined): Promise<void> {
  const latest = app.rows[0]?.id;
  app.viewing = checkpointId && checkpointId !== latest ? { id: checkpointId } : undefined;
  return app.refresh();
}

/** Continues the conversation from the checkpoint on screen: it is forked and becomes the latest. */
export async function forkViewed(app: HistoryHost): Promise<void> {
  if (!app.viewing) return;
  try {
    await app.session.fork(app.currentId, app.viewing.id);
    app.viewing = undefined;
    await app.refresh();
    // The Fork button went with the banner. On a phone the composer's focus would open the keyboard over
    // the conversation unasked (the page load avoids it too): the conversation, going on from here, takes it.
    if (phoneScreen.matches) app.chat.focusLog();
    else app.chat.focus();
  } catch (error) {
    app.chat.showError(`Could not fork: ${messageOf(error)}`);
  }
}
