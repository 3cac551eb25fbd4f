/**
 * The demo's sidebar (demo/src/ui/sidebar.ts) in Chromium: rows redrawn by
 * another tab's writes never take a rename's input away, nor a press's click.
 */
import { cdp } from "vitest/browser";
import { afterEach, expect, it } from "vitest";
import { createSidebar, type SidebarActions } from "../../demo/src/ui/sidebar.js";

let sidebar: ReturnType<typeof createSidebar> | undefined;
afterEach(() => sidebar?.el.remove());

/** A sidebar in the page, its actions recorded. */
function shown(actions: Partial<SidebarActions> = {}) {
  sidebar = createSidebar({
    onNew() {},
    onOpen() {},
    onRename() {},
    onDelete() {},
    onInstructions() {},
    onSearch: () => Promise.resolve(new Set()),
    ...actions,
  });
  document.body.append(sidebar.el);
  return sidebar;
}

const titles = (el: HTMLElement) =>
  [...el.querySelectorAll(".thread-list > li")].map((li) =>
    li.classList.contains("editing")
      ? `input: ${li.querySelector("input")!.value}`
      : li.querySelector(".thread-title")!.textContent,
  );

it("a rename in progress whose thread goes to the top keeps its input, its text and the focus, unsaved", async () => {
  const renamed: [string, string][] = [];
  const errors: string[] = [];
  const onError = (event: ErrorEvent) => errors.push(event.message);
  addEventListener("error", onError);
  try {
    const s = shown({ onRename: (id, title) => renamed.push([id, title]) });
    const alpha = { id: "a", title: "Alpha", updatedAt: Date.now() - 2000 };
    const bravo = { id: "b", title: "Bravo", updatedAt: Date.now() - 3000 };
    s.update([alpha, bravo], "a");
    const row = s.el.querySelector('[data-thread-id="b"]')!.parentElement!;
    row.querySelector<HTMLButtonElement>(".menu-button")!.click();
    [...row.querySelectorAll<HTMLButtonElement>(".menu-item")].find((b) => b.textContent?.includes("Rename"))!.click();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const input = s.el.querySelector<HTMLInputElement>(".rename-input")!;
    expect(document.activeElement).toBe(input);
    input.value = "Bra half";
    // Bravo's run (here or in another tab) touches it: it goes to the top.
    s.update([{ ...bravo, updatedAt: Date.now() }, alpha], "a");
    expect(titles(s.el)).toEqual(["input: Bra half", "Alpha"]);
    expect(document.activeElement).toBe(input);
    expect(renamed).toEqual([]);
    expect(errors).toEqual([]);
  } finally {
    removeEventListener("error", onError);
  }
});

it("a tap on a row that another tab's write moves while the finger is down opens the row tapped", async () => {
  const opened: string[] = [];
  const s = shown({ onOpen: (id) => opened.push(id) });
  await cdp().send("Emulation.setTouchEmulationEnabled", { enabled: true, maxTouchPoints: 1 });
  try {
    const now = Date.now();
    const alpha = { id: "a", title: "Alpha", updatedAt: now - 1000 };
    const bravo = { id: "b", title: "Bravo", updatedAt: now - 2000 };
    const charlie = { id: "c", title: "Charlie", updatedAt: now - 3000 };
    s.update([alpha, bravo, charlie], "a");
    const rect = s.el.querySelector('[data-thread-id="b"]')!.getBoundingClientRect();
    // The test runs in an iframe of the runner's page: the touch is in that page's coordinates.
    const frame = window.frameElement?.getBoundingClientRect() ?? { left: 0, top: 0, width: innerWidth };
    const scale = frame.width / innerWidth;
    const point = { x: frame.left + (rect.left + 10) * scale, y: frame.top + (rect.top + rect.height / 2) * scale };
    await cdp().send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: [point] });
    // Charlie touched by another tab: it goes to the top, Bravo one row down, Alpha under the finger.
    s.update([{ ...charlie, updatedAt: now }, alpha, bravo], "a");
    await cdp().send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
    await expect.poll(() => opened).toEqual(["b"]);
    // Once the tap has landed, the rows take their places.
    await expect.poll(() => titles(s.el)).toEqual(["Charlie", "Alpha", "Bravo"]);
  } finally {
    await cdp().send("Emulation.setTouchEmulationEnabled", { enabled: false });
  }
});
