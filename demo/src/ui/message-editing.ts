/**
 * The in-place message editor of the chat log: one at a time (a thread keeps
 * one across a reload, drafts.ts). Redraws keep it as it is, the node itself:
 * drawn again while the reader typed (an answer streaming, another tab's
 * turn), it lost what was typed meanwhile ("turn oneturn one, …").
 */
import type { BaseMessage } from "@langchain/core/messages";
import type { MessageEdit } from "../drafts.js";
import type { MessageList } from "./message-list.js";
import { editor, text } from "./messages.js";

/** What the editor tells the chat. */
export interface EditingHooks {
  /** The editor's text changed, or it closed (undefined): what to open again after a reload. */
  onEditing(edit: MessageEdit | undefined): void;
  /** Sent: `value` in place of the user message at `index`, shown at once (the tail follows it). */
  onEdit(index: number, value: string): void;
}

/** The editor of a chat whose messages are drawn by `list`. */
export function createMessageEditing(list: MessageList, hooks: EditingHooks) {
  let editing: { index: number; original: string; form: HTMLFormElement; field: HTMLTextAreaElement } | undefined;

  /** The bubble of message `index` as drawn now, and its row of actions (Copy, Edit, its versions), if any. */
  function drawnParts(index: number): { bubble?: HTMLElement; tools?: HTMLElement } {
    const [bubble, next] = list.nodesAt(index) ?? [];
    const tools = next instanceof HTMLElement && next.classList.contains("message-tools") ? next : undefined;
    return { bubble: bubble instanceof HTMLElement ? bubble : undefined, tools };
  }

  /** Closes the open editor, its message back in its place (as drawn now); returns the message's parts. */
  function close(): ReturnType<typeof drawnParts> {
    const parts = editing ? drawnParts(editing.index) : {};
    if (editing && parts.bubble) editing.form.replaceWith(parts.bubble);
    else editing?.form.remove();
    if (parts.tools) parts.tools.hidden = false;
    editing = undefined;
    return parts;
  }

  /** Opens the editor in place of `bubble` (message `index`); returns its field. */
  function start(index: number, bubble: HTMLElement): HTMLTextAreaElement | undefined {
    close();
    const original = bubble.textContent ?? "";
    const form = editor(original, (value) => {
      if (editing?.form !== form) return;
      hooks.onEditing(undefined);
      const { bubble: shown, tools } = close();
      // Cancelled: back to the message's own Edit button, not to the page.
      if (value === undefined) return tools?.querySelector<HTMLElement>('[data-testid="edit"]')?.focus();
      if (!shown) return;
      // Shown at once as it will read, marked pending as a message just sent is: the run may first wait
      // for another tab's. What followed it belongs to the version it replaces: off the screen until the
      // run draws the new one (or, stopped while waiting, a redraw brings it back).
      shown.textContent = value;
      shown.classList.add("draft");
      for (let after = shown.nextSibling; after; after = shown.nextSibling) after.remove();
      list.forget(index);
      hooks.onEdit(index, value);
    });
    // What a redraw needs to open it again (log-state.ts).
    form.dataset.index = String(index);
    form.dataset.original = original;
    bubble.replaceWith(form);
    // The message's own actions (Copy, Edit, its versions) would stand under the editor's
    // buttons, a second row offering Edit again: hidden while the editor is open.
    const { tools } = drawnParts(index);
    if (tools) tools.hidden = true;
    const field = form.querySelector("textarea") ?? undefined;
    if (field) editing = { index, original, form, field };
    field?.addEventListener("input", () => hooks.onEditing({ index, original, value: field.value }));
    return field;
  }

  return {
    start,
    /** Whether an editor is open. */
    get open(): boolean {
      return editing !== undefined;
    },
    /** Whether the focus is in the open editor. */
    get focused(): boolean {
      return editing?.form.contains(document.activeElement) ?? false;
    },
    /**
     * The log's nodes for a redraw of `messages` (`drawn`, each message's
     * nodes): the open editor stays, as it is, in place of its message's
     * bubble while its message reads as it did at the thread's latest state
     * (streamed steps, a run's end, another tab's change). Over an older
     * checkpoint (`past`), or its message gone, it closes (what was typed is
     * kept for its thread, drafts.ts).
     */
    place(messages: readonly BaseMessage[], drawn: Node[][], past: boolean): Node[] {
      const edited = editing && messages[editing.index];
      const keep = edited && !past && edited.getType() === "human" && text(edited) === editing!.original;
      const { tools } = editing ? drawnParts(editing.index) : {};
      if (tools) tools.hidden = Boolean(keep);
      if (!keep) editing = undefined;
      return drawn.flatMap((parts, index) => (index === editing?.index ? [editing.form, ...parts.slice(1)] : parts));
    },
    /** Gives the focus back to the editor (after a redraw, if it had it and lost it). */
    refocus(): void {
      if (editing && !editing.form.contains(document.activeElement)) editing.field.focus({ preventScroll: true });
    },
  };
}
