/**
 * The composer's message box: it grows with its text, Enter sends (Shift+Enter
 * is a new line), and its hint says why it is disabled, shortened where the
 * full one would be cut off. The chat (chat.ts) puts it in its form, beside
 * Send and Stop.
 */
import { h, phoneScreen } from "./dom.js";
import { fitsOneLine } from "./fit.js";

/** Why the composer is disabled: it shows this hint in place of its usual one. */
export type DisabledReason = "viewing" | "approval" | "asking-elsewhere";

/**
 * Each hint of the composer in full, and shorter. The box is one line high
 * until something is typed, so a hint that would wrap is cut off: the short
 * one is shown when the full one does not fit the line (a phone, a tablet
 * with History open; "Read-only (older checkpoint)" at 320 px lost its
 * second line).
 */
const HINTS: Record<DisabledReason | "message", readonly [full: string, short: string]> = {
  message: ["Message the assistant… (Enter sends, Shift+Enter: new line)", "Message the assistant…"],
  viewing: ["Read-only (older checkpoint)", "Read-only"],
  approval: ["Approve or reject the memory first", "Approve or reject first"],
  // The card is held until another tab's run asks its question (app-view.ts).
  "asking-elsewhere": ["Another tab is about to ask about this memory…", "Another tab is asking…"],
};

/** The composer grows with its text up to this height (px), as in style.css. */
const COMPOSER_MAX = 200;
/** Longer texts are not measured (see autosize). */
const AUTOSIZE_LIMIT = 3_000;

/** What the message box tells the chat. */
export interface ComposerActions {
  onSend(text: string): void;
  /** The box's text changed (typed, sent, put back): the draft to keep. */
  onDraft(text: string): void;
}

/** The message box; `field` is the textarea, for the chat's form and its focus. */
export function createComposer(actions: ComposerActions) {
  const field = h("textarea", {
    id: "composer",
    testid: "composer",
    rows: 1,
    "aria-label": "Message",
    autocomplete: "off",
  });
  let disabledReason: DisabledReason | undefined;

  function autosize(): void {
    // Measuring forces a layout of the whole text (about half a second for
    // 20,000 characters); past a few thousand the box is at its maximum anyway.
    if (field.value.length > AUTOSIZE_LIMIT) {
      field.style.height = `${COMPOSER_MAX}px`;
      return;
    }
    field.style.height = "auto";
    field.style.height = `${Math.min(field.scrollHeight, COMPOSER_MAX)}px`;
  }
  function submit(): void {
    const value = field.value.trim();
    if (!value || disabledReason) return;
    field.value = "";
    autosize();
    actions.onDraft("");
    actions.onSend(value);
  }
  /** The hint for the composer's state, short where the full one would be cut off. */
  function showHint(): void {
    const [full, short] = HINTS[disabledReason ?? "message"];
    // A phone's keyboard has no Shift+Enter to speak of: the short hint there.
    const touch = !disabledReason && phoneScreen.matches;
    field.placeholder = !touch && fitsOneLine(field, full) ? full : short;
  }
  field.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  field.addEventListener("input", () => {
    autosize();
    actions.onDraft(field.value);
  });
  showHint();
  phoneScreen.addEventListener("change", showHint);

  return {
    field,
    /** Sends the text, if there is any and the box is enabled. */
    submit,
    /** Chooses the hint again (the box's width changed). */
    showHint,
    /** Puts `value` in the box, sized to it. */
    set(value: string): void {
      field.value = value;
      autosize();
    },
    /** Disables the box for `reason` (its hint says why), or enables it again. */
    disable(reason: DisabledReason | undefined): void {
      disabledReason = reason;
      field.disabled = Boolean(reason);
      showHint();
    },
  };
}
