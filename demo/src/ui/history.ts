/**
 * The time-travel panel: the thread's checkpoints grouped by branch, one row
 * per turn (the question and the start of its answer), the turn's internal
 * steps on demand. Rows are drawn as the checkpoints stream in, so a long
 * thread shows its latest turns at once instead of a blank panel.
 */
import { answerOf, preview, type Row } from "../timeline.js";
import { h, replace, type Child } from "./dom.js";
import { markdownText } from "./markdown.js";

export interface HistoryActions {
  onView(checkpointId: string): void;
  onClose(): void;
}

interface Branch {
  rows: Row[];
  /** The checkpoint it branched off, for all but the first. */
  forkedFrom?: Row;
}

/** A turn on one branch: its steps, newest first; `rows[0]` is where the turn ended. */
interface Turn {
  rows: Row[];
}

/** Which node wrote a checkpoint: what its parent was about to run. */
function nodeOf(row: Row, parent: Row | undefined): string {
  if (row.source === "input") return "input";
  if (row.source === "update") return parent && parent.messageCount === row.messageCount ? "fork" : "update";
  const names = parent?.next.filter((name) => name !== "__start__") ?? [];
  return names.length ? names.join(", ") : "start";
}

/** Splits the checkpoint tree (rows newest first) into branches: the latest one first, each later one up to where it joins. */
export function branches(rows: Row[]): Branch[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const hasChildren = new Set<string>();
  for (const row of rows) if (row.parentId) hasChildren.add(row.parentId);
  const assigned = new Set<string>();
  const result: Branch[] = [];
  // Newest first: the first leaf is the thread's latest checkpoint.
  for (const leaf of rows) {
    if (hasChildren.has(leaf.id) || assigned.has(leaf.id)) continue;
    const branch: Branch = { rows: [] };
    for (let row: Row | undefined = leaf; row; row = row.parentId ? byId.get(row.parentId) : undefined) {
      if (assigned.has(row.id)) {
        branch.forkedFrom = row;
        break;
      }
      assigned.add(row.id);
      branch.rows.push(row);
    }
    result.push(branch);
  }
  return result;
}

/** A branch's rows (newest first) cut into turns: a turn ends (going back) at its input checkpoint. */
function turns(rows: Row[]): Turn[] {
  const result: Turn[] = [];
  let current: Row[] = [];
  for (const row of rows) {
    current.push(row);
    if (row.source === "input") {
      result.push({ rows: current });
      current = [];
    }
  }
  if (current.length) result.push({ rows: current });
  return result;
}

/**
 * What a checkpoint paused for approval says: awaiting only while nothing came after it. One with a child
 * was answered (or forked, and its fork asks again): it said "awaiting approval" long after the answer.
 */
function pauseNote(row: Row, continued: Set<string>): HTMLSpanElement | null {
  if (!row.paused) return null;
  return continued.has(row.id)
    ? h("span", { class: "paused answered" }, "asked for approval")
    : h("span", { class: "paused" }, "paused: awaiting approval");
}

export function createHistory(actions: HistoryActions) {
  const body = h("div", { class: "history-body" });
  const loading = h("p", { class: "muted loading", hidden: true }, "Loading older checkpoints…");
  const el = h(
    "aside",
    { class: "history", id: "history", "aria-label": "History", hidden: true },
    h(
      "header",
      {},
      h("h2", {}, "History"),
      h(
        "button",
        { class: "icon", type: "button", "aria-label": "Close history", onclick: () => actions.onClose() },
        "✕",
      ),
    ),
    h(
      "p",
      { class: "muted" },
      "One row per turn, newest first. Click one to see the conversation as it was, then fork from it to continue on a new branch.",
    ),
    body,
    loading,
  );
  /** Turns whose steps are open, by the id of the turn's first step (stable as newer steps arrive). */
  const open = new Set<string>();

  function checkpointButton(row: Row, selected: boolean, label: Child[]): HTMLButtonElement {
    return h(
      "button",
      {
        type: "button",
        class: `checkpoint${selected ? " selected" : ""}`,
        testid: "checkpoint",
        dataset: {
          ...(row.messageCount === undefined ? {} : { messageCount: row.messageCount }),
          checkpointId: row.id,
          step: row.step,
        },
        "aria-pressed": selected ? "true" : "false",
        onclick: () => actions.onView(row.id),
      },
      ...label,
    );
  }

  function count(row: Row): string {
    return row.messageCount === undefined ? "" : `${row.messageCount} msg${row.messageCount === 1 ? "" : "s"}`;
  }

  function stepButton(
    row: Row,
    parent: Row | undefined,
    viewingId: string | undefined,
    latestId: string | undefined,
    continued: Set<string>,
  ): HTMLLIElement {
    const selected = viewingId ? viewingId === row.id : row.id === latestId;
    return h(
      "li",
      {},
      checkpointButton(row, selected, [
        h("span", { class: "step" }, `step ${row.step}`),
        h("span", { class: "node" }, nodeOf(row, parent)),
        h("span", { class: "count" }, count(row)),
        h("time", { class: "time", dateTime: row.ts }, row.time),
        pauseNote(row, continued),
      ]),
    );
  }

  function turnItem(
    turn: Turn,
    byId: Map<string, Row>,
    viewingId: string | undefined,
    latestId: string | undefined,
    continued: Set<string>,
    forkedFrom?: Row,
  ): HTMLLIElement {
    const end = turn.rows[0]!;
    const key = turn.rows[turn.rows.length - 1]!.id;
    // The question is on the turn's input checkpoint (not read yet while older pages stream in).
    let question = turn.rows.find((row) => row.source === "input")?.input;
    let answer = answerOf(turn.rows);
    // A branch that starts mid-turn (a regenerated answer) continues the turn it forked from: its
    // question is that turn's, and its answer was written by the step that ran from the fork point.
    if (question === undefined && forkedFrom) {
      let row: Row | undefined = forkedFrom;
      while (row && row.source !== "input") row = row.parentId ? byId.get(row.parentId) : undefined;
      question = row?.input;
      answer ||= answerOf([forkedFrom]);
    }
    const selected = viewingId ? turn.rows.some((row) => row.id === viewingId) : end.id === latestId;
    const steps = h("ol", { class: "steps" });
    const toggle = h(
      "button",
      { type: "button", class: "steps-toggle", dataset: { turn: key }, "aria-expanded": String(open.has(key)) },
      `${turn.rows.length} step${turn.rows.length === 1 ? "" : "s"}`,
    );
    // Steps are drawn only when asked for: most readers want the turns.
    const draw = () =>
      replace(
        steps,
        ...turn.rows.map((row) =>
          stepButton(row, row.parentId ? byId.get(row.parentId) : undefined, viewingId, latestId, continued),
        ),
      );
    if (open.has(key)) draw();
    toggle.addEventListener("click", () => {
      const expand = !open.has(key);
      if (expand) open.add(key);
      else open.delete(key);
      toggle.setAttribute("aria-expanded", String(expand));
      if (expand) draw();
      else replace(steps);
    });
    return h(
      "li",
      { class: "turn" },
      checkpointButton(end, selected, [
        h("span", { class: "question" }, question === undefined ? "…" : preview(question) || "(no text)"),
        // The answer as the chat renders it, Markdown and all: its text. The question stays as written, as in the chat.
        answer ? h("span", { class: "answer" }, preview(markdownText(answer))) : null,
        h(
          "span",
          { class: "meta" },
          [`step ${end.step}`, count(end)].filter(Boolean).join(" · "),
          end.time && " · ",
          end.time && h("time", { dateTime: end.ts }, end.time),
        ),
        pauseNote(end, continued),
      ]),
      toggle,
      steps,
    );
  }

  /**
   * Where the focus is in the list, as a selector that finds the same control
   * after a redraw (a turn's row, a step's row, or a turn's steps toggle).
   */
  function focusedControl(): string | undefined {
    const focused = document.activeElement;
    if (!(focused instanceof HTMLElement) || !body.contains(focused)) return undefined;
    const { checkpointId, turn } = focused.dataset;
    if (turn) return `[data-turn="${CSS.escape(turn)}"]`;
    if (!checkpointId) return undefined;
    const row = `[data-checkpoint-id="${CSS.escape(checkpointId)}"]`;
    return focused.closest(".steps") ? `.steps ${row}` : `.turn > ${row}`;
  }

  /** The list, drawn anew (see render). */
  function draw(rows: Row[], viewingId: string | undefined, complete: boolean): void {
    loading.hidden = complete;
    if (rows.length === 0) {
      replace(body, complete ? h("p", { class: "muted" }, "No checkpoints yet.") : null);
      return;
    }
    const all = branches(rows);
    const byId = new Map(rows.map((row) => [row.id, row]));
    // Checkpoints something came after (rows stream in newest first: a child is read before its parent).
    const continued = new Set(rows.flatMap((row) => (row.parentId ? [row.parentId] : [])));
    const latestId = all[0]?.rows[0]?.id;
    replace(
      body,
      ...all.map((branch, index) =>
        h(
          "section",
          { class: `branch${index === 0 ? " current" : ""}`, testid: "branch" },
          h(
            "h3",
            {},
            index === 0 ? "Current branch" : `Branch ${index + 1}`,
            branch.forkedFrom ? h("span", { class: "muted" }, ` · from step ${branch.forkedFrom.step}`) : null,
          ),
          h(
            "ol",
            { class: "turns" },
            ...turns(branch.rows).map((turn, i, list) =>
              turnItem(
                turn,
                byId,
                viewingId,
                latestId,
                continued,
                i === list.length - 1 ? branch.forkedFrom : undefined,
              ),
            ),
          ),
        ),
      ),
    );
  }

  return {
    el,
    /** Moves the focus into the panel (it was opened from the keyboard or by a click). */
    focus(): void {
      el.querySelector<HTMLButtonElement>("header button")?.focus();
    },
    /** Draws the checkpoints read so far; `complete: false` while more are coming. */
    render(rows: Row[], viewingId: string | undefined, complete = true): void {
      // A redraw replaces the buttons: a keyboard user choosing a row keeps the focus on it.
      const refocus = focusedControl();
      draw(rows, viewingId, complete);
      if (refocus) body.querySelector<HTMLElement>(refocus)?.focus({ preventScroll: true });
    },
  };
}
