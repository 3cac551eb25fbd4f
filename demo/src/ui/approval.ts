/**
 * The approval card: what the assistant wants to remember, an editor per
 * memory, a reason for a rejection, Approve and Reject. Re-rendering the same
 * card keeps what was typed and where the focus was; what was typed is also
 * handed out as it changes, for a reload to draw the card as it was left.
 */
import type { CardEdits } from "../drafts.js";
import { h, replace } from "./dom.js";
import { fitPlaceholder } from "./fit.js";

/** The reason field's hint, and the shorter one shown where it would be cut off (a 320 px phone). */
const REASON_HINT = ["Why not? (the assistant reads this)", "Why not? (optional)"] as const;

/** What the card's buttons do, and where the focus goes when it goes away. */
export interface ApprovalActions {
  /**
   * Save, with the memories as the user left them in the editor (one per pending call). `questionId` is
   * the question the card was drawn for (undefined for a pause that asked none).
   */
  onApprove(memories: string[], questionId: string | undefined): void;
  /** Do not save; the agent reads the reason. */
  onReject(reason: string, questionId: string | undefined): void;
  /** Something was typed in the card drawn for `questionId`: the edits as they stand. */
  onEdited(edits: CardEdits, questionId: string | undefined): void;
  /** The card went away while it had the focus. */
  onGone(): void;
  /** The card appeared or changed: the log may follow it. */
  onShown(): void;
}

/** A pending call, as the card reads it: `id` is its tool call id. */
type PendingCall = { id?: string; name: string; args: Record<string, unknown> };

/**
 * Which field of the card an editor is, across re-renders (its `data-field`): the memory argument of a
 * call, by the call's id (by its place and proposal for a call without one). Not its place among the
 * fields: a call added or removed shifts them, and what was typed, the focus and the caret would move to
 * another memory.
 */
const fieldOf = (call: PendingCall, index: number): string =>
  call.id ? `memory:${call.id}` : `memory@${index}:${String(call.args.memory ?? "")}`;
const REASON_FIELD = "reason";

/** The card's field that has the focus (an editor or the reason), by its `data-field`, and the selection in it. */
function typingAt(slot: HTMLElement) {
  const field = document.activeElement;
  return (
    (field instanceof HTMLTextAreaElement || field instanceof HTMLInputElement) &&
    slot.contains(field) &&
    field.dataset.field !== undefined && {
      key: field.dataset.field,
      selection: [field.selectionStart ?? 0, field.selectionEnd ?? 0, field.selectionDirection ?? "none"] as const,
    }
  );
}

/** The slot under the log that holds the card, and the function that (re)draws or hides it. */
export function createApproval(actions: ApprovalActions) {
  const slot = h("div", { class: "approval-slot" });
  // Picks the reason field's hint when the field is first laid out (before it is painted) and whenever
  // its width changes (a rotation, History opening).
  const sizing =
    typeof ResizeObserver === "undefined"
      ? undefined
      : new ResizeObserver((entries) => {
          for (const { target } of entries) fitPlaceholder(target as HTMLInputElement, ...REASON_HINT);
        });

  /** The question the card on show answers (its interrupt id). */
  let shownId: string | undefined;
  /**
   * The proposal the card on show was drawn for while the run was still going and its question not asked
   * yet (no id to draw it for): the draw with the id, once asked, is the same card, not another question.
   */
  let drawnBeforeAsked: string | undefined;

  function show(calls: PendingCall[] | undefined, disabled = false, questionId?: string, kept?: CardEdits): void {
    // Re-rendering replaces the buttons: where the focus was, and whether Approve could be used yet.
    const hadFocus = slot.contains(document.activeElement);
    const typingIn = typingAt(slot);
    const proposal = JSON.stringify(calls?.map((call) => call.args.memory ?? ""));
    // The card drawn while the run went on, now asked: what was typed meanwhile stays, kept for the id.
    const askedNow = shownId === undefined && questionId !== undefined && drawnBeforeAsked === proposal;
    drawnBeforeAsked = disabled && questionId === undefined ? proposal : undefined;
    // Another question (another tab answered the one on show, and the agent asked again): a new card.
    if (questionId !== shownId && !askedNow) replace(slot);
    shownId = questionId;
    const wasShown = slot.childElementCount > 0;
    sizing?.disconnect();
    if (!calls || calls.length === 0) {
      replace(slot);
      if (hadFocus) actions.onGone();
      return;
    }
    const wasUsable = slot.querySelector<HTMLButtonElement>('[data-testid="approve"]')?.disabled === false;
    const memories = calls.map((call) => String(call.args.memory ?? ""));
    // The editors keep what the user typed across re-renders of the same card, each its own call's; a new
    // card starts from the edits kept for its question (typed before a reload), if they are for as many memories.
    const shown = new Map(
      [...slot.querySelectorAll<HTMLTextAreaElement>('[data-testid="approval-args"]')].map((el) => [
        el.dataset.field,
        el.value,
      ]),
    );
    const restored = kept?.memories.length === memories.length ? kept.memories : undefined;
    const editors = calls.map((call, i) =>
      h("textarea", {
        class: "memory-edit",
        testid: "approval-args",
        rows: 2,
        "aria-label": `Memory ${i + 1}`,
        dataset: { field: fieldOf(call, i) },
      }),
    );
    editors.forEach(
      (editor, i) => (editor.value = (wasShown ? shown.get(editor.dataset.field) : restored?.[i]) ?? memories[i]!),
    );
    const reasonField = slot.querySelector<HTMLInputElement>('[data-testid="approval-reason"]');
    const reason = h("input", {
      type: "text",
      testid: "approval-reason",
      placeholder: REASON_HINT[0],
      "aria-label": "Reason for rejecting",
      dataset: { field: REASON_FIELD },
    });
    reason.value = reasonField?.value ?? (wasShown ? "" : (kept?.reason ?? ""));
    const blank = () => editors.some((editor) => editor.value.trim() === "");
    const approve = h(
      "button",
      {
        class: "primary",
        type: "button",
        testid: "approve",
        disabled: disabled || blank(),
        onclick: () =>
          actions.onApprove(
            editors.map((editor) => editor.value),
            questionId,
          ),
      },
      "Approve",
    );
    // A memory emptied in its editor cannot be approved (it saved the proposal unasked): Reject is the way.
    for (const editor of editors) editor.addEventListener("input", () => (approve.disabled = disabled || blank()));
    const edited = () =>
      actions.onEdited({ memories: editors.map((editor) => editor.value), reason: reason.value }, questionId);
    for (const field of [...editors, reason]) field.addEventListener("input", edited);
    // Typed before the question was asked: kept so far for no question, which a reload would not show.
    if (askedNow && (reason.value !== "" || editors.some((editor, i) => editor.value !== memories[i]))) edited();
    replace(
      slot,
      h(
        "section",
        { class: "approval", testid: "approval", role: "region", "aria-label": "Approval needed" },
        h("h2", {}, "Save to long-term memory?"),
        // The memory shows once, in its editor, as it will be saved: a second copy in the
        // assistant's words ("your …" above "my …") left people asking which one is kept.
        h(
          "p",
          {},
          memories.length === 1
            ? "The assistant wants to remember this (edit it before saving if you like):"
            : `The assistant wants to remember these ${memories.length} things (edit them before saving if you like):`,
        ),
        ...editors,
        reason,
        h(
          "div",
          { class: "actions" },
          approve,
          h(
            "button",
            { type: "button", testid: "reject", disabled, onclick: () => actions.onReject(reason.value, questionId) },
            "Reject",
          ),
        ),
      ),
    );
    sizing?.observe(reason);
    // A re-render of the same card while a field had the focus (a refresh as the user types): the same
    // field takes it back, with its selection; if its call is gone, no field does. On Approve it would eat
    // the next keys, what was typed lost (and Space or Enter would approve).
    if (typingIn && wasShown) {
      const field = [...editors, reason].find((el) => el.dataset.field === typingIn.key);
      field?.focus();
      field?.setSelectionRange(...typingIn.selection);
    }
    // A card that just appeared (or just became usable) takes the focus: the next thing to do is
    // to decide. A re-render of the same card keeps it on the card.
    else if (!disabled && (hadFocus || !wasShown || !wasUsable)) approve.focus();
    actions.onShown();
  }

  return { el: slot, show };
}
