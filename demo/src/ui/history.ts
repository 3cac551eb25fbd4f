/**
 * The time-travel panel: every checkpoint of the thread (step, node, time,
 * message count), grouped by branch. Clicking one shows the state there.
 */
import type { StateSnapshot } from "@langchain/langgraph/web";
import { h, replace } from "./dom.js";

export interface HistoryActions {
  onView(checkpointId: string): void;
  onClose(): void;
}

interface Row {
  id: string;
  parentId?: string;
  step: number;
  node: string;
  time: string;
  messageCount: number;
  paused: boolean;
}

interface Branch {
  rows: Row[];
  /** The checkpoint it branched off, for all but the first. */
  forkedFrom?: Row;
}

function idOf(config: StateSnapshot["config"] | undefined): string | undefined {
  return config?.configurable?.checkpoint_id as string | undefined;
}

/** Which node wrote each checkpoint: what its parent was about to run. */
function nodeOf(snapshot: StateSnapshot, parent: StateSnapshot | undefined, messageCount: number): string {
  const source = snapshot.metadata?.source;
  if (source === "input") return "input";
  if (source === "update" || source === "fork") {
    const parentCount = ((parent?.values as { messages?: unknown[] } | undefined)?.messages ?? []).length;
    return parent && parentCount === messageCount ? "fork" : "update";
  }
  const names = parent?.next.filter((name) => name !== "__start__") ?? [];
  return names.length ? names.join(", ") : "start";
}

/** Splits the checkpoint tree into branches: the latest one first, each later one up to where it joins. */
export function branches(snapshots: StateSnapshot[]): Branch[] {
  const byId = new Map<string, StateSnapshot>();
  for (const snapshot of snapshots) byId.set(idOf(snapshot.config)!, snapshot);
  const rows = new Map<string, Row>();
  const hasChildren = new Set<string>();
  for (const snapshot of snapshots) {
    const id = idOf(snapshot.config)!;
    const parentId = idOf(snapshot.parentConfig);
    if (parentId) hasChildren.add(parentId);
    const messageCount = ((snapshot.values as { messages?: unknown[] }).messages ?? []).length;
    rows.set(id, {
      id,
      parentId,
      step: snapshot.metadata?.step ?? 0,
      node: nodeOf(snapshot, parentId ? byId.get(parentId) : undefined, messageCount),
      time: snapshot.createdAt ? new Date(snapshot.createdAt).toLocaleTimeString() : "",
      messageCount,
      paused: snapshot.next.includes("tools"),
    });
  }
  const assigned = new Set<string>();
  const result: Branch[] = [];
  // Newest first: the first leaf is the thread's latest checkpoint.
  for (const snapshot of snapshots) {
    const leaf = idOf(snapshot.config)!;
    if (hasChildren.has(leaf) || assigned.has(leaf)) continue;
    const branch: Branch = { rows: [] };
    for (let row = rows.get(leaf); row; row = row.parentId ? rows.get(row.parentId) : undefined) {
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

export function createHistory(actions: HistoryActions) {
  const body = h("div", { class: "history-body" });
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
      "Every checkpoint the saver kept. Click one to see the conversation as it was, then fork from it to continue on a new branch.",
    ),
    body,
  );

  return {
    el,
    render(snapshots: StateSnapshot[], viewingId: string | undefined): void {
      if (snapshots.length === 0) {
        replace(body, h("p", { class: "muted" }, "No checkpoints yet."));
        return;
      }
      const all = branches(snapshots);
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
              {},
              ...branch.rows.map((row) => {
                const selected = viewingId ? viewingId === row.id : row.id === latestId;
                return h(
                  "li",
                  {},
                  h(
                    "button",
                    {
                      type: "button",
                      class: `checkpoint${selected ? " selected" : ""}`,
                      testid: "checkpoint",
                      dataset: { messageCount: row.messageCount, checkpointId: row.id, step: row.step },
                      "aria-pressed": selected ? "true" : "false",
                      onclick: () => actions.onView(row.id),
                    },
                    h("span", { class: "step" }, `step ${row.step}`),
                    h("span", { class: "node" }, row.node),
                    h("span", { class: "count" }, `${row.messageCount} msg${row.messageCount === 1 ? "" : "s"}`),
                    h("time", { class: "time" }, row.time),
                    row.paused ? h("span", { class: "paused" }, "paused: awaiting approval") : null,
                  ),
                );
              }),
            ),
          ),
        ),
      );
    },
  };
}
