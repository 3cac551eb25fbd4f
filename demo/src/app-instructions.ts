/**
 * Per-thread custom instructions in the app: kept sealed in the thread's
 * sidebar row (session.ts), prepended by the agent as a system message on
 * every answer of that thread (agent.ts), shown above its conversation and
 * edited from the thread's menu (ui/instructions.ts).
 */
import { messageOf } from "./errors.js";
import type { Session } from "./session.js";
import { createInstructionsDialog, createInstructionsNote } from "./ui/instructions.js";

/** What the instructions need of the app; read at each use, so always the current values. */
export interface InstructionsHost {
  readonly session: Session;
  /** The open thread. */
  readonly currentId: string;
  /** A thread's title, as the sidebar shows it. */
  titleOf(threadId: string): string;
  showError(message: string): void;
}

/** The note and the editor of the app's threads' instructions. */
export function createThreadInstructions(app: InstructionsHost) {
  let reads = 0;
  const note = createInstructionsNote(() => void edit(app.currentId));
  const dialog = createInstructionsDialog(async (threadId, text) => {
    await app.session.setInstructions(threadId, text);
    if (threadId === app.currentId) await show();
  });
  /** Shows the open thread's instructions (a newer read overtakes an older one). */
  async function show(): Promise<void> {
    const seq = ++reads;
    const id = app.currentId;
    try {
      const text = await app.session.instructions(id);
      if (seq === reads) note.show(text || undefined);
    } catch (error) {
      if (seq !== reads) return;
      note.show(undefined);
      app.showError(`Could not read this thread's instructions: ${messageOf(error)}`);
    }
  }
  async function edit(threadId: string): Promise<void> {
    let current = "";
    try {
      current = await app.session.instructions(threadId);
    } catch (error) {
      // Unreadable (refused, say): the editor still opens, to replace them.
      app.showError(`Could not read this thread's instructions: ${messageOf(error)}`);
    }
    dialog.open(threadId, app.titleOf(threadId), current);
  }
  return { note: note.el, dialog: dialog.el, show, edit };
}
