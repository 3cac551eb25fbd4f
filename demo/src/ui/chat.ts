/**
 * The conversation: messages, the streaming answer, the approval card, the
 * banner shown while looking at an older checkpoint, and the composer.
 *
 * Streaming is cheap on purpose: tokens are batched and drawn once per
 * animation frame into one text node, and the log scrolls only when the
 * reader is already at the bottom (reading the layout once per frame, not per
 * token). A 20,000-character answer used to force a layout per token.
 */
import type { BaseMessage, ToolMessage } from "@langchain/core/messages";
import { isStopped } from "../agent.js";
import type { CardEdits, MessageEdit } from "../drafts.js";
import type { TurnProblem } from "../runs.js";
import { createApproval } from "./approval.js";
import { createFollower } from "./chat-scroll.js";
import { createComposer, type DisabledReason } from "./composer.js";
export type { DisabledReason } from "./composer.js";
import { h, phoneScreen, replace } from "./dom.js";
import { keepPlace, restorePlace, type LogPlace } from "./log-state.js";
import { createMessageList, patchChildren } from "./message-list.js";
import { createMessageEditing } from "./message-editing.js";
import { renderMessage, text } from "./messages.js";

export interface ChatActions {
  onSend(text: string): void;
  /** The composer's text changed (typed, sent, put back): the draft to keep across a reload. */
  onDraft(text: string): void;
  /** Save, with the memories as the user left them in the editor (one per pending call). */
  onApprove(memories: string[], questionId: string | undefined): void;
  /** Do not save; the agent reads the reason. */
  onReject(reason: string, questionId: string | undefined): void;
  /** Something was typed in the approval card for `questionId`: the edits to keep across a reload. */
  onCardEdited(edits: CardEdits, questionId: string | undefined): void;
  onFork(): void;
  onBackToLatest(): void;
  onStop(): void;
  onRetry(): void;
  onRegenerate(): void;
  /** Sends `text` in place of the user message at `index`: a fork before it. */
  onEdit(index: number, text: string): void;
  /** The message editor's text changed, or it closed (undefined): what to open again after a reload. */
  onEditing(edit: MessageEdit | undefined): void;
}

/** Where the view stands when it is not at the thread's latest state. */
export interface Viewing {
  step: number;
  messageCount: number;
}

/** What the messages may offer: editing and regenerating only at the latest state, when idle. */
export interface ShowOptions {
  draft?: boolean;
  interactive?: boolean;
  /** Branch switchers, by the index of the message where branches diverge. */
  branches?: Map<number, Node>;
  /** A message editor open before a reload: opened again (no editor being open), if its message reads the same. */
  reopen?: MessageEdit;
  /** An older checkpoint on view: an open message editor (of the latest state) closes. */
  past?: boolean;
}

/** How long a redraw keeps trying to put back a focus the redraw before could not (ms). */
const FOCUS_RETRY_MS = 2_000;

function problemText(problem: TurnProblem): string {
  if (problem.kind === "stopped") return "You stopped this answer.";
  if (problem.kind === "interrupted")
    return "This answer was cut short (the page was closed or reloaded while it was being written).";
  return `The answer failed: ${problem.message}`;
}

/** The chat; `top`: shown above the conversation (the thread's custom instructions). */
export function createChat(actions: ChatActions, top?: Node) {
  // The only live region of the app: new messages are announced from here.
  const log = h("div", {
    class: "messages",
    role: "log",
    "aria-label": "Conversation",
    "aria-live": "polite",
    "aria-busy": "false",
    tabIndex: 0,
  });
  const banner = h("div", { class: "viewing-banner", hidden: true });
  const approval = createApproval({
    onApprove: (memories, questionId) => actions.onApprove(memories, questionId),
    onReject: (reason, questionId) => actions.onReject(reason, questionId),
    onEdited: (edits, questionId) => actions.onCardEdited(edits, questionId),
    onGone: () => focusNext(),
    onShown: () => scroll.followSoon(),
  });
  // Another tab (or worker) is answering on this thread: say so; a message sent now waits for it.
  const elsewhere = h(
    "div",
    { class: "busy-elsewhere", testid: "busy-elsewhere", hidden: true },
    h("span", { class: "dots", "aria-hidden": "true" }),
    "Replying in another tab… a message you send now waits for that answer.",
  );
  const error = h("div", { class: "error-banner", hidden: true });
  const box = createComposer(actions);
  const composer = box.field;
  const send = h("button", { class: "primary", testid: "send", type: "submit", "aria-label": "Send message" }, "Send");
  const stop = h(
    "button",
    {
      class: "stop",
      testid: "stop",
      type: "button",
      hidden: true,
      "aria-label": "Stop the answer",
      onclick: () => actions.onStop(),
    },
    "Stop",
  );
  const form = h("form", { class: "composer" }, composer, stop, send);
  const thinking = h(
    "div",
    { class: "thinking", testid: "thinking" },
    h("span", { class: "dots", "aria-hidden": "true" }),
    "Thinking…",
  );
  let streaming: { bubble: HTMLDivElement; text: Text } | undefined;
  let pending = "";
  let frame = 0;
  let running = false;
  /** The focus a redraw could not put back (log-state.ts), and when. */
  let focusLeft: { focused: NonNullable<LogPlace["focused"]>; at: number } | undefined;
  let busyElsewhere = false;
  let status: HTMLElement | undefined;

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    box.submit();
  });
  const scroll = createFollower(log, box.showHint);

  const el = h(
    "section",
    { class: "chat", "aria-label": "Chat" },
    banner,
    top ?? null,
    h("div", { class: "log-wrap" }, log, scroll.button),
    approval.el,
    elsewhere,
    error,
    form,
  );

  function flush(): void {
    frame = 0;
    if (!pending) return;
    if (!streaming) {
      thinking.remove();
      const node = document.createTextNode("");
      streaming = { bubble: h("div", { class: "message assistant streaming" }, node), text: node };
      log.append(streaming.bubble);
    }
    streaming.text.appendData(pending);
    pending = "";
    scroll.follow();
  }
  function dropStream(): void {
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    pending = "";
    streaming = undefined;
  }
  /**
   * The status line at the end of the log: "thinking" while a run has no
   * text yet (not while it waits for another tab's answer: the banner says
   * so, and nothing here is thinking), or the turn's problem.
   */
  function placeTail(): void {
    if (running && !streaming && !busyElsewhere) log.append(thinking);
    else thinking.remove();
    if (status) log.append(status);
  }

  /**
   * Where the focus goes from a control that went away (an answered approval card): the composer, to type
   * what comes next; on a phone the conversation, which goes on from there: a focused composer would open
   * the phone's keyboard over it unasked.
   */
  function focusNext(): void {
    if (phoneScreen.matches) log.focus();
    else composer.focus();
  }

  const list = createMessageList();
  const editing = createMessageEditing(list, {
    onEditing: (edit) => actions.onEditing(edit),
    onEdit: (index, value) => {
      placeTail();
      actions.onEdit(index, value);
    },
  });
  const startEdit = editing.start;

  return {
    el,
    focus(): void {
      composer.focus();
    },
    /** Focuses the conversation (where a phone's keyboard would cover what comes next). */
    focusLog(): void {
      log.focus();
    },
    /** Focuses what comes after a control that went away: the composer, or on a phone the conversation. */
    focusNext,
    /** Puts back a message that was not sent (unless something new is being typed). */
    restoreDraft(value: string): void {
      if (composer.value.trim()) return;
      box.set(value);
      actions.onDraft(value);
      composer.focus();
    },
    /** Puts a draft kept from before a reload in the composer, unless something is typed already. */
    setDraft(value: string): void {
      if (composer.value.trim()) return;
      box.set(value);
    },
    /** Puts `value` in the composer in place of its text (another thread's draft). */
    replaceDraft(value: string): void {
      box.set(value);
    },
    /** The composer's text as it stands. */
    get draft(): string {
      return composer.value;
    },
    /** Focuses "Fork from here", when an older checkpoint is on view. */
    focusFork(): void {
      banner.querySelector<HTMLButtonElement>('[data-testid="fork"]')?.focus();
    },
    /** Shows these messages (the streaming answer, if any, is dropped); `draft`: not committed yet. */
    showMessages(messages: BaseMessage[], options: ShowOptions = {}): void {
      dropStream();
      const draft = options.draft ?? false;
      const interactive = !draft && (options.interactive ?? false);
      let lastAnswer = -1;
      for (let i = messages.length - 1; i >= 0; i--) {
        if (messages[i]!.getType() === "human") break;
        if (messages[i]!.getType() === "ai" && (text(messages[i]!) || isStopped(messages[i]!))) {
          lastAnswer = i;
          break;
        }
      }
      const answered = new Set(
        messages.flatMap((message) => (message.getType() === "tool" ? [(message as ToolMessage).tool_call_id] : [])),
      );
      const editorFocused = editing.focused;
      // Only the messages that changed are drawn (ui/message-list.ts).
      const drawn = list.update(
        messages,
        (index) => ({
          draft,
          regenerable: interactive && index === lastAnswer,
          answered,
          branches: options.branches?.get(index),
        }),
        (message, index, as) =>
          renderMessage(message, {
            draft: as.draft,
            index,
            answered: as.answered,
            onEdit: as.draft ? undefined : startEdit,
            onRegenerate: as.regenerable ? () => actions.onRegenerate() : undefined,
            branches: as.branches,
          }),
      );
      const nodes = editing.place(messages, drawn, options.past ?? false);
      if (nodes.length === 0 && !running) {
        nodes.push(
          h(
            "div",
            { class: "welcome" },
            h("h2", {}, "A LangGraph agent in your browser"),
            h(
              "p",
              {},
              "Everything runs in this page and is kept in IndexedDB: reload and the conversation is still here. Try “remember that my favourite colour is teal”, then ask “what do you remember about me?” in another thread.",
            ),
          ),
        );
      }
      // A redraw keeps an open editor and the focus on a message's control (log-state.ts).
      // A control focused before a redraw and not drawn in it (a branch switcher, drawn once the thread's
      // tree is read) is tried again by the redraws of the next moments, while the focus is still nowhere.
      const left = focusLeft && performance.now() - focusLeft.at < FOCUS_RETRY_MS ? focusLeft.focused : undefined;
      const place = keepPlace(log, left);
      const { reopen } = options;
      if (editing.open) place.editing = undefined;
      else if (!place.editing && reopen) place.editing = { ...reopen, index: String(reopen.index) };
      patchChildren(log, nodes);
      // An older checkpoint is read-only, as its composer says: Edit there did nothing but hide the answers
      // after the message (the run refuses a view of the past). Fork from here is the way on from it.
      log.classList.toggle("past", options.past ?? false);
      placeTail();
      if (editorFocused) editing.refocus();
      const missed = restorePlace(log, place, interactive ? startEdit : undefined);
      focusLeft = missed && { focused: missed, at: missed === left ? focusLeft!.at : performance.now() };
      // Put back where the reader was: the follower counts them as there, not at the end.
      if (place.anchor) scroll.measure();
      scroll.redrawn();
    },
    /** Adds the user's message at once, before the run echoes it. */
    addPendingUser(value: string): void {
      log.querySelector(".welcome")?.remove();
      log.append(h("div", { class: "message user draft" }, value));
      placeTail();
      // The reader sent it: show it, wherever they were.
      scroll.toEnd();
    },
    /** Queues a token; the screen takes the batch on the next frame. */
    appendToken(token: string): void {
      pending += token;
      if (!frame) frame = requestAnimationFrame(flush);
    },
    /** A run is going (Stop, "thinking", `aria-busy`) or not. */
    setRunning(value: boolean): void {
      running = value;
      // Stop hidden while it has the focus (the reader pressed it) would drop the focus to the page.
      const stopFocused = !value && document.activeElement === stop;
      stop.hidden = !value;
      if (stopFocused && !composer.disabled) composer.focus();
      log.setAttribute("aria-busy", String(value));
      if (value) status = undefined;
      placeTail();
    },
    /** The latest turn's problem (stopped, failed, interrupted) with Retry, or nothing. */
    showProblem(problem: TurnProblem | undefined): void {
      status?.remove();
      status = problem
        ? h(
            "div",
            { class: `turn-status ${problem.kind}`, testid: "turn-status", dataset: { kind: problem.kind } },
            h("p", {}, problemText(problem)),
            h(
              "button",
              { type: "button", class: "primary", testid: "retry", onclick: () => actions.onRetry() },
              "Retry",
            ),
          )
        : undefined;
      placeTail();
      if (status) scroll.followSoon();
    },
    /**
     * The approval card for the pending save_memory calls, or none; `disabled` while a run goes on; `kept`:
     * what was typed in a card for this question before a reload.
     */
    showApproval: approval.show,
    /** Shows or hides the "viewing an older checkpoint" banner. */
    showViewing(viewing: Viewing | undefined): void {
      banner.hidden = !viewing;
      if (!viewing) {
        replace(banner);
        return;
      }
      replace(
        banner,
        h("span", {}, `Viewing the state at step ${viewing.step} (${viewing.messageCount} messages). `),
        h(
          "button",
          { class: "primary", type: "button", testid: "fork", onclick: () => actions.onFork() },
          "Fork from here",
        ),
        h("button", { type: "button", onclick: () => actions.onBackToLatest() }, "Back to latest"),
      );
    },
    /** Whether another tab is running this thread. */
    setBusyElsewhere(busy: boolean): void {
      elsewhere.hidden = !busy;
      busyElsewhere = busy;
      placeTail();
    },
    /** Disables the composer for `reason` (its hint says why), or enables it again. */
    setDisabled(reason: DisabledReason | undefined): void {
      box.disable(reason);
      send.disabled = Boolean(reason);
    },
    showError(message: string | undefined): void {
      error.hidden = !message;
      replace(error, message ?? "");
    },
  };
}

export type Chat = ReturnType<typeof createChat>;
