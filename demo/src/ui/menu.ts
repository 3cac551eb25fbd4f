/**
 * A menu button (the WAI-ARIA menu button pattern): a button with
 * `aria-haspopup="menu"` and `aria-expanded` opens a list of menu items.
 * The arrows, Home and End move between the items; Escape closes the menu and
 * gives the focus back to its button; Tab, a click elsewhere or a chosen item
 * close it too. Items are buttons (`role="menuitem"`) with a roving focus.
 */
import { h } from "./dom.js";
import { icon, type IconName } from "./icons.js";

/** One entry of a menu. */
export interface MenuItem {
  label: string;
  icon: IconName;
  /** Becomes the item's `data-testid`. */
  testid?: string;
  /** Drawn in the danger colour (a delete). */
  danger?: boolean;
  /** Runs once the menu has closed; the item decides where the focus goes next. */
  onSelect(): void;
}

/** What {@link createMenuButton} draws. */
export interface MenuOptions {
  /** The button's accessible name ("Actions for …"). */
  label: string;
  /** Becomes the button's `data-testid`. */
  testid?: string;
  items: MenuItem[];
  /** Told when the menu opens or closes (a list redrawn under an open menu would lose it). */
  onToggle?(open: boolean): void;
}

let menus = 0;

/**
 * A "⋯" button and its menu, in one wrapper to put where the button goes
 * (the menu is positioned below the button, or above it when the room
 * below, in the nearest scrolling ancestor, is too short).
 */
export function createMenuButton(options: MenuOptions) {
  const id = `menu-${++menus}`;
  const button = h(
    "button",
    {
      class: "icon menu-button",
      type: "button",
      testid: options.testid,
      title: "More",
      "aria-label": options.label,
      "aria-haspopup": "menu",
      "aria-expanded": "false",
      "aria-controls": id,
    },
    icon("more"),
  );
  const items = options.items.map((item) =>
    h(
      "button",
      {
        class: item.danger ? "menu-item danger" : "menu-item",
        type: "button",
        role: "menuitem",
        tabindex: "-1",
        testid: item.testid,
        onclick: () => {
          // The focus goes back to the menu's button first: an action that opens no field of its own
          // (a dialog, which gives the focus back on closing) then returns there, not to the page.
          close(true);
          item.onSelect();
        },
      },
      icon(item.icon),
      item.label,
    ),
  );
  const menu = h("div", { class: "popup-menu", id, role: "menu", "aria-label": options.label, hidden: true }, ...items);
  const el = h("div", { class: "menu-anchor" }, button, menu);

  const isOpen = () => !menu.hidden;
  function focusItem(index: number): void {
    const next = (index + items.length) % items.length;
    items[next]!.focus();
  }
  /** A press outside the menu closes it, leaving the focus where the press puts it. */
  function onOutside(event: PointerEvent): void {
    if (!el.contains(event.target as Node)) close(false);
  }
  function open(focusIndex = 0): void {
    if (isOpen()) return;
    menu.hidden = false;
    button.setAttribute("aria-expanded", "true");
    menu.classList.toggle("above", !roomBelow(menu));
    document.addEventListener("pointerdown", onOutside, true);
    options.onToggle?.(true);
    focusItem(focusIndex);
  }
  function close(returnFocus: boolean): void {
    if (!isOpen()) return;
    menu.hidden = true;
    button.setAttribute("aria-expanded", "false");
    document.removeEventListener("pointerdown", onOutside, true);
    if (returnFocus) button.focus();
    options.onToggle?.(false);
  }

  button.addEventListener("click", () => (isOpen() ? close(true) : open()));
  button.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    open(event.key === "ArrowDown" ? 0 : items.length - 1);
  });
  menu.addEventListener("keydown", (event) => {
    const at = items.indexOf(document.activeElement as HTMLButtonElement);
    const moves: Record<string, number> = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: items.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      focusItem(moves[event.key]!);
    } else if (event.key === "Escape") {
      // Handled (defaultPrevented): the drawer or panel around the menu stays open.
      event.preventDefault();
      close(true);
    } else if (event.key === "Tab") close(false);
  });

  return { el, button, open, close: () => close(false) };
}

/** Whether `menu` fits below its button inside the nearest ancestor that scrolls. */
function roomBelow(menu: HTMLElement): boolean {
  let box: HTMLElement | null = menu.parentElement;
  while (box && getComputedStyle(box).overflowY === "visible") box = box.parentElement;
  const limit = box ? box.getBoundingClientRect().bottom : window.innerHeight;
  return menu.getBoundingClientRect().bottom <= limit;
}
