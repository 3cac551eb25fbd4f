/** A tiny DOM builder: `h("button", { testid: "send", onclick }, "Send")`. */
import { dayText } from "../clock.js";

/** A phone's width, as in style.css: the layout's drawer, short hints, no keyboard opened unasked. */
export const phoneScreen = matchMedia("(max-width: 760px)");

export type Child = Node | string | number | false | null | undefined;

export interface Props {
  class?: string;
  /** Becomes `data-testid`: the contract with the end-to-end tests. */
  testid?: string;
  dataset?: Record<string, string | number>;
  [key: string]: unknown;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "testid") el.dataset.testid = String(value);
    else if (key === "dataset")
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) el.dataset[k] = String(v);
    else if (key.startsWith("on") && typeof value === "function")
      el.addEventListener(key.slice(2), value as EventListener);
    else if (key in el && !key.includes("-")) (el as unknown as Record<string, unknown>)[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Element, children: Child[]): void {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces an element's children. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/**
 * Says `text` in a form's result line (`.status`): a failure (`failed` true) shows as one, in the colour of
 * errors; `"warning"` is a change done with something left to tell (marked, not red). `detail`: the
 * technical words behind it (the browser's "Failed to fetch"), on hover, not in the sentence a user reads.
 */
export function setStatus(status: HTMLElement, text: string, failed: boolean | "warning" = false, detail = ""): void {
  status.textContent = text;
  status.title = detail;
  status.classList.toggle("failed", failed === true);
  status.classList.toggle("warning", failed === "warning");
}

/** "just now", "5 min ago", then as clock.ts writes a moment in a list: "14:02", "3 Mar". */
export function relativeTime(ms: number, now = Date.now()): string {
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  return dayText(new Date(ms), now);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A form field: its label, the control, and an optional hint under it. */
export function field(label: string, input: HTMLInputElement | HTMLSelectElement, hint?: string): HTMLLabelElement {
  return h(
    "label",
    { class: "field" },
    h("span", {}, label),
    input,
    hint ? h("small", { class: "muted" }, hint) : null,
  );
}
