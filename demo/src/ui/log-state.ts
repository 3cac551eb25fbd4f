/**
 * What a redraw of the chat log must not take away from the reader: an
 * open message editor (with what was typed in it) and the focus on a
 * message's control. A redraw (a run's end, another tab's change) draws
 * the messages that changed anew (ui/message-list.ts), and one could come
 * just after the reader pressed a control of such a message: the focus fell
 * to the page. An editor open before a reload is opened again from here (an
 * open one stays as it is, ui/message-editing.ts).
 */

/** The reader's place in the log before a redraw (see {@link keepPlace}). */
export interface LogPlace {
  /** The open editor: the message it edits (its index and text as shown) and what it holds now. */
  editing?: { index: string; original: string; value: string };
  /** The focused control: its test id and the index of the message it belongs to. */
  focused?: { testid: string; index: string };
  /**
   * The message whose version switcher has the focus, to keep where it was
   * on screen, and how far its top was from the log's (px). A redraw
   * replaces every message, so the browser's own scroll anchoring has
   * nothing to hold on to. (A reader scrolled up otherwise is left to the
   * follower, chat-scroll.ts, which does not pull them down.)
   */
  anchor?: { index: string; offset: number };
}

/** The controls of a message's version switcher (ui/messages.ts `branchSwitcher`). */
const SWITCHER_CONTROLS = new Set(["branch-previous", "branch-next"]);

/** The index (`data-index`) of the message `el` belongs to: its bubble, or the tools row after it. */
function messageIndexOf(el: Element): string | undefined {
  const tools = el.closest(".message-tools");
  const message = tools ? tools.previousElementSibling : el.closest(".message");
  return message instanceof HTMLElement ? message.dataset.index : undefined;
}

/**
 * Notes where the reader is in `log` before it is redrawn. `left`: a focus
 * the last redraw could not put back (see {@link restorePlace}), taken as
 * the reader's while the focus is still nowhere.
 */
export function keepPlace(log: HTMLElement, left?: LogPlace["focused"]): LogPlace {
  const place: LogPlace = {};
  const form = log.querySelector<HTMLElement>(".message-editor");
  const field = form?.querySelector("textarea");
  const { index, original } = form?.dataset ?? {};
  if (field && index !== undefined && original !== undefined) place.editing = { index, original, value: field.value };
  const active = document.activeElement;
  if (!place.editing && active instanceof HTMLElement && log.contains(active)) {
    const testid = active.dataset.testid;
    const at = messageIndexOf(active);
    if (testid && at !== undefined) place.focused = { testid, index: at };
  }
  if (!place.editing && !place.focused && left && (!active || active === document.body)) place.focused = left;
  // A version switch replaces the conversation under the reader: the message switched stays put, wherever
  // the end goes. (Other controls leave the place to the follower: Regenerate at the end keeps following.)
  const switching = place.focused && SWITCHER_CONTROLS.has(place.focused.testid);
  const bubble = switching && log.querySelector(`.message[data-index="${CSS.escape(place.focused!.index)}"]`);
  if (bubble) {
    const offset = bubble.getBoundingClientRect().top - log.getBoundingClientRect().top;
    place.anchor = { index: place.focused!.index, offset };
  }
  return place;
}

/**
 * Puts the reader back after `log` was redrawn: the same message where it
 * was in view, if it is still there; the editor opens again on the same
 * message, if it is still there with the same text (`reopen`, the chat's own
 * Edit, undefined while editing is not offered), holding what was typed; or
 * the focus goes back to the same control of the same message. Returns the
 * focus it could not put back (the control is not drawn yet: a branch
 * switcher comes in a later redraw), for the next redraw to try.
 */
export function restorePlace(
  log: HTMLElement,
  place: LogPlace,
  reopen: ((index: number, bubble: HTMLElement) => HTMLTextAreaElement | undefined) | undefined,
): LogPlace["focused"] {
  const bubbleAt = (index: string) =>
    log.querySelector<HTMLElement>(`.message[data-index="${CSS.escape(index)}"]`) ?? undefined;
  const anchored = place.anchor && bubbleAt(place.anchor.index);
  if (anchored) {
    log.scrollTop += anchored.getBoundingClientRect().top - log.getBoundingClientRect().top - place.anchor!.offset;
  }
  if (place.editing && reopen) {
    const { index, original, value } = place.editing;
    const bubble = bubbleAt(index);
    if (bubble && bubble.textContent === original) {
      const field = reopen(Number(index), bubble);
      if (field) field.value = value;
    }
  }
  if (place.focused) {
    const { testid, index } = place.focused;
    const bubble = bubbleAt(index);
    const tools = bubble?.nextElementSibling;
    const within =
      tools instanceof HTMLElement && tools.classList.contains("message-tools") ? [bubble!, tools] : [bubble];
    for (const holder of within) {
      const control = holder?.querySelector<HTMLElement>(`[data-testid="${CSS.escape(testid)}"]`);
      if (!control) continue;
      // Disabled now (‹ on the first version it led to): its enabled neighbour in the same group.
      const target = (control as HTMLButtonElement).disabled
        ? control.parentElement?.querySelector<HTMLElement>("button:not(:disabled)")
        : control;
      return void target?.focus({ preventScroll: true });
    }
    return place.focused;
  }
  return undefined;
}
