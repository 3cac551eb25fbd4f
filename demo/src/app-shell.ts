/**
 * The page around the app's parts: the top bar (menu, thread heading, lock
 * badge, History and Settings buttons) and the body (sidebar, scrim, chat,
 * History panel). Built once; the App keeps the elements it updates.
 */
import { h, phoneScreen } from "./ui/dom.js";
import { icon } from "./ui/icons.js";

export { phoneScreen };
/** The layout's other breakpoint, as in style.css: a tablet's width. */
export const tabletScreen = matchMedia("(min-width: 761px) and (max-width: 1100px)");

/** Whether the thread list is on screen: the phone's drawer open, or a wider screen's column not collapsed. */
export function sidebarShown(): boolean {
  return phoneScreen.matches
    ? document.body.classList.contains("sidebar-open")
    : !document.body.classList.contains("sidebar-collapsed");
}

/**
 * Shows or hides the thread list: on a phone a drawer over the chat, on a
 * wider screen a column that can be collapsed to give the chat the room.
 */
export function toggleSidebar(menuButton: HTMLElement, open = !sidebarShown()): void {
  if (phoneScreen.matches) document.body.classList.toggle("sidebar-open", open);
  else document.body.classList.toggle("sidebar-collapsed", !open);
  menuButton.setAttribute("aria-expanded", String(sidebarShown()));
}

/**
 * Closes the phone's drawer (a thread was chosen, the scrim tapped, Escape);
 * a wide screen's column stays. Focus inside the drawer goes back to the
 * menu button. Says whether the drawer was open.
 */
export function closeDrawer(menuButton: HTMLElement, sidebar: HTMLElement, focusMenu = false): boolean {
  if (!document.body.classList.contains("sidebar-open")) return false;
  const hadFocus = sidebar.contains(document.activeElement);
  document.body.classList.remove("sidebar-open");
  menuButton.setAttribute("aria-expanded", String(sidebarShown()));
  if (focusMenu || hadFocus) menuButton.focus();
  return true;
}

/**
 * Makes room for History as it opens: a phone's drawer closes (History covers
 * the screen; the drawer would be left underneath), and a tablet's thread
 * list gives way (the list, the chat and History side by side leave the chat
 * too narrow). `gaveWay`: the list gave way when History opened, so it comes
 * back as History closes. Returns whether the list has now given way.
 */
export function roomForHistory(
  menuButton: HTMLElement,
  sidebar: HTMLElement,
  open: boolean,
  gaveWay: boolean,
): boolean {
  if (!open) {
    if (gaveWay) toggleSidebar(menuButton, true);
    return false;
  }
  closeDrawer(menuButton, sidebar);
  if (tabletScreen.matches && sidebarShown()) {
    toggleSidebar(menuButton, false);
    return true;
  }
  return gaveWay;
}

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
      // A wide screen shows the list from the start; a phone's drawer starts closed.
      "aria-expanded": String(!phoneScreen.matches),
      testid: "toggle-sidebar",
    },
    icon("sidebar"),
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
