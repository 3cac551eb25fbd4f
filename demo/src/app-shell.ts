/**
 * The page around the app's parts: the top bar (menu, thread heading, lock
 * badge, History and Settings buttons) and the body (sidebar, scrim, chat,
 * History panel). Built once; the App keeps the elements it updates.
 */
import { h } from "./ui/dom.js";
import { icon } from "./ui/icons.js";

/** The parts the shell lays out, and what its own controls do. */
export interface ShellParts {
  sidebar: HTMLElement;
  chat: HTMLElement;
  history: HTMLElement;
  settings: HTMLElement;
  onMenu(): void;
  onHistory(): void;
  onSettings(): void;
  /** The scrim behind the open sidebar (on a phone) was clicked. */
  onScrim(): void;
}

/** The app's page, and the top bar's elements the App updates. */
export function createShell(parts: ShellParts) {
  const heading = h("h1", { class: "thread-heading" }, "New thread");
  const lockBadge = h(
    "span",
    { class: "lock-badge", title: "Encrypted at rest", hidden: true },
    icon("lock", "Locked: encrypted at rest"),
  );
  const menuButton = h(
    "button",
    {
      class: "icon menu",
      type: "button",
      "aria-label": "Show threads",
      "aria-controls": "sidebar",
      "aria-expanded": "false",
    },
    "☰",
  );
  const historyButton = h(
    "button",
    { type: "button", testid: "show-history", "aria-controls": "history", "aria-expanded": "false" },
    "History",
  );
  menuButton.addEventListener("click", () => parts.onMenu());
  historyButton.addEventListener("click", () => parts.onHistory());
  const settingsButton = h(
    "button",
    { type: "button", testid: "settings", "aria-haspopup": "dialog", onclick: () => parts.onSettings() },
    "Settings",
  );
  const el = h(
    "div",
    { class: "app" },
    h(
      "header",
      { class: "topbar" },
      menuButton,
      heading,
      lockBadge,
      h("div", { class: "spacer" }),
      historyButton,
      settingsButton,
    ),
    h(
      "div",
      { class: "body" },
      parts.sidebar,
      h("div", { class: "scrim", onclick: () => parts.onScrim() }),
      h("main", { class: "main" }, parts.chat),
      parts.history,
    ),
    parts.settings,
  );
  return { el, heading, lockBadge, menuButton, historyButton };
}
