/**
 * Following the end of the conversation's log: new content scrolls into
 * view while the reader is at the end, and a "New messages" button appears
 * when they have scrolled up. The log reads its layout once per frame, not
 * per token or per message.
 */
import { h } from "./dom.js";

/** Within this many pixels of the end counts as "at the bottom". */
const BOTTOM_SLACK = 48;

/** Keeps `log` at its end while the reader is there; see {@link createFollower}. */
export interface Follower {
  /** The "↓ New messages" button, to place over the log. */
  readonly button: HTMLButtonElement;
  /** Scrolls to the end, and counts the reader as there. */
  stickToEnd(): void;
  /** Follows new content at the next frame (see {@link createFollower}). */
  followSoon(): void;
  /** Follows new content now (the caller is already in a frame). */
  follow(): void;
  /** The reader acted at the end (sent a message): follow from now on, wherever they were. */
  toEnd(): void;
  /** The log was scrolled for the reader (put back where they were): at the end or not, as it is now. */
  measure(): void;
  /** The conversation was drawn again: follows at the next frame, and a scroll up it caused is not the reader. */
  redrawn(): void;
}

/**
 * Follows `log`. `onResize` runs after each change of its size (History
 * opened, the thread list collapsed, a phone turned), once the reader at the
 * end is put back there: their text reflowed, and they stay at the end, not
 * mid-answer.
 */
export function createFollower(log: HTMLElement, onResize: () => void): Follower {
  let atBottom = true;
  const button = h(
    "button",
    { type: "button", class: "new-messages", testid: "new-messages", hidden: true, onclick: () => stickToEnd() },
    "↓ New messages",
  );
  /** Whether the log is scrolled to within {@link BOTTOM_SLACK} of its end. */
  const nearEnd = () => log.scrollHeight - log.scrollTop - log.clientHeight <= BOTTOM_SLACK;
  function stickToEnd(): void {
    log.scrollTop = log.scrollHeight;
    atBottom = true;
    button.hidden = true;
  }
  /**
   * After new content: follow it if the reader was at the bottom, else offer
   * the button, but only if something is below the view. New content may
   * also be shorter (an edit or a branch switch replaces the conversation):
   * when it all fits, no scroll event comes, and the reader is at the end.
   */
  function follow(): void {
    redrawing = false;
    if (atBottom) stickToEnd();
    else if (nearEnd()) stickToEnd();
    else button.hidden = false;
  }
  /**
   * Follows at the next frame: the layout that reading the scroll height
   * needs is then the frame's own, not a second one forced in the middle of
   * a task (a 20,000-character message costs a long layout each time).
   */
  let followFrame = 0;
  function followSoon(): void {
    if (!followFrame) {
      followFrame = requestAnimationFrame(() => {
        followFrame = 0;
        follow();
      });
    }
  }
  new ResizeObserver(() => {
    if (atBottom) stickToEnd();
    onResize();
  }).observe(log);
  // Only the reader scrolling up leaves the end. A scroll event comes a frame after the scroll:
  // text appended meanwhile (a fast answer) must not read as the reader having left. Nor must a redraw
  // that first shortened the log (Regenerate takes the last answer away: the browser moves the scroll
  // up to the new end) and then lengthened it, both before the event (seen under load: the reader was
  // left 1,006 px above the new answer's end); `redrawing` holds from the redraw to the next follow.
  let lastTop = 0;
  let redrawing = false;
  log.addEventListener("scroll", () => {
    if (nearEnd()) atBottom = true;
    else if (log.scrollTop < lastTop && !redrawing) atBottom = false;
    lastTop = log.scrollTop;
    if (atBottom) button.hidden = true;
  });
  return {
    button,
    stickToEnd,
    follow,
    followSoon,
    toEnd: () => {
      atBottom = true;
      followSoon();
    },
    measure: () => {
      atBottom = nearEnd();
      lastTop = log.scrollTop;
    },
    redrawn: () => {
      redrawing = true;
      followSoon();
    },
  };
}
