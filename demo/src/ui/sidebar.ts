/**
 * The sidebar: new thread, search, and the threads (title, last updated),
 * each with a menu to rename it, edit its instructions or delete it.
 */
import { h, phoneScreen, relativeTime } from "./dom.js";
import { createMenuButton } from "./menu.js";

/** The search field's hint: with its shortcut where there is a keyboard to press it on. */
function searchHint(): string {
  return phoneScreen.matches ? "Search threads" : "Search threads (Ctrl+K)";
}

export interface SidebarThread {
  id: string;
  title: string;
  updatedAt: number;
}

export interface SidebarActions {
  onNew(): void;
  onOpen(id: string): void;
  onRename(id: string, title: string): void;
  onDelete(id: string): void;
  /** Opens the editor of the thread's custom instructions. */
  onInstructions(id: string): void;
  /** The ids of the threads whose title or messages match `query`. */
  onSearch(query: string): Promise<Set<string>>;
}

export function createSidebar(actions: SidebarActions) {
  const list = h("ul", { class: "thread-list", "aria-label": "Threads" });
  const empty = h("p", { class: "muted empty-threads" }, "No threads yet. Send a message to start one.");
  // Sync between devices (Settings → Sync): one line. Not a live region: only the message log announces.
  const syncStatus = h("p", { class: "sync-status", testid: "sync-status" }, "Sync off");
  const search = h("input", {
    type: "search",
    class: "thread-search",
    testid: "thread-search",
    placeholder: searchHint(),
    "aria-label": "Search threads, titles and messages",
    autocomplete: "off",
  });
  phoneScreen.addEventListener("change", () => (search.placeholder = searchHint()));
  const noMatch = h("p", { class: "muted empty-threads", hidden: true }, "No thread matches.");
  /** The threads the search found, or undefined when nothing is searched. */
  let matches: Set<string> | undefined;
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  let searchSeq = 0;
  function runSearch(): void {
    const query = search.value.trim();
    const seq = ++searchSeq;
    if (!query) {
      matches = undefined;
      render();
      return;
    }
    actions.onSearch(query).then(
      (found) => {
        if (seq !== searchSeq) return;
        matches = found;
        render();
      },
      (error: unknown) => console.warn("search", error),
    );
  }
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 150);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && search.value) {
      // Clears the search first; a second Escape goes on to whatever Escape closes.
      event.preventDefault();
      search.value = "";
      runSearch();
    }
  });
  const el = h(
    "nav",
    { class: "sidebar", id: "sidebar", "aria-label": "Threads" },
    h(
      "button",
      { class: "primary new-thread", testid: "new-thread", type: "button", onclick: () => actions.onNew() },
      "+ New thread",
    ),
    search,
    list,
    empty,
    noMatch,
    syncStatus,
  );
  let threads: SidebarThread[] = [];
  let currentId = "";
  let editing: string | undefined;
  /** A delete asks once more: the first click arms it for a few seconds. */
  let confirming: string | undefined;
  let confirmTimer: ReturnType<typeof setTimeout> | undefined;
  /** A row's menu is open; `stale`: the list changed meanwhile. */
  let menuOpen = false;
  let stale = false;
  /**
   * A press in the list: its rows keep their places until it is released, and the click it makes has landed.
   * A row moved under the pointer meanwhile (another tab's run moved its thread to the top) lost the click, or
   * gave it to the thread moved there.
   */
  let pressed = false;
  let releaseTimer: ReturnType<typeof setTimeout> | undefined;
  list.addEventListener("pointerdown", () => {
    pressed = true;
    clearTimeout(releaseTimer);
  });
  const release = () => {
    clearTimeout(releaseTimer);
    if (!pressed) return;
    pressed = false;
    // A task later: after the click's own handlers.
    if (stale)
      setTimeout(() => {
        if (stale && !pressed) render();
      });
  };
  // A mouse's click comes in the pointerup's task, a finger's tap a gesture later: the press ends with its
  // click, or half a second after the release when it makes none (a drag, a long press).
  addEventListener("click", release, true);
  addEventListener("pointerup", () => {
    clearTimeout(releaseTimer);
    if (pressed) releaseTimer = setTimeout(release, 500);
  });
  addEventListener("pointercancel", release, true);
  // The window's own blur (released outside it), not an element's: the press itself moves the focus.
  addEventListener("blur", (event) => event.target === window && release());

  function item(thread: SidebarThread): HTMLLIElement {
    if (editing === thread.id) {
      const input = h("input", { value: thread.title, "aria-label": "Thread title", class: "rename-input" });
      const finish = (save: boolean) => {
        if (editing !== thread.id) return;
        editing = undefined;
        const title = input.value.trim();
        if (save && title && title !== thread.title) actions.onRename(thread.id, title);
        render();
      };
      input.addEventListener("keydown", (event) => {
        if (event.key !== "Enter" && event.key !== "Escape") return;
        // Escape here ends the rename only, not the drawer around it.
        event.preventDefault();
        finish(event.key === "Enter");
        // Done from the keyboard: the focus goes back to the row's menu, where the rename began.
        rowOf(thread.id)?.querySelector<HTMLButtonElement>(".menu-button")?.focus();
      });
      input.addEventListener("blur", () => finish(true));
      queueMicrotask(() => {
        input.focus();
        input.select();
      });
      return h("li", { class: "thread-item editing" }, input);
    }
    const current = thread.id === currentId;
    return h(
      "li",
      { class: `thread-item${current ? " current" : ""}` },
      h(
        "button",
        {
          class: "thread-open",
          type: "button",
          testid: "thread",
          dataset: { threadId: thread.id },
          "aria-current": current ? "page" : undefined,
          onclick: () => actions.onOpen(thread.id),
        },
        h("span", { class: "thread-title" }, thread.title),
        h(
          "time",
          { class: "thread-time", dateTime: new Date(thread.updatedAt).toISOString() },
          relativeTime(thread.updatedAt),
        ),
      ),
      confirming === thread.id
        ? h(
            "button",
            {
              class: "danger confirm-delete",
              type: "button",
              "aria-label": `Confirm: delete “${thread.title}”`,
              onclick: () => {
                confirming = undefined;
                // The row goes: the focus moves to the next row (or the one before, or the search field), not
                // to the page.
                const row = rowOf(thread.id);
                const neighbour = (row?.nextElementSibling ?? row?.previousElementSibling)?.querySelector<HTMLElement>(
                  "[data-thread-id]",
                );
                (neighbour ?? search).focus();
                actions.onDelete(thread.id);
              },
              // Escape takes the question back, and the focus returns to the row's menu button.
              onkeydown: (event: KeyboardEvent) => {
                if (event.key !== "Escape") return;
                event.preventDefault();
                confirming = undefined;
                clearTimeout(confirmTimer);
                render();
                rowOf(thread.id)?.querySelector<HTMLButtonElement>(".menu-button")?.focus();
              },
            },
            "Delete?",
          )
        : actionsMenu(thread),
    );
  }

  /** The row's "⋯" menu: its actions in one button, so that the title keeps the row's width. */
  function actionsMenu(thread: SidebarThread): HTMLElement {
    return createMenuButton({
      label: `Actions for “${thread.title}”`,
      testid: "thread-menu",
      onToggle: (open) => {
        menuOpen = open;
        if (!open && stale) render();
      },
      items: [
        {
          label: "Rename",
          icon: "pencil",
          onSelect: () => {
            editing = thread.id;
            render();
          },
        },
        {
          label: "Instructions",
          icon: "note",
          testid: "thread-instructions",
          onSelect: () => actions.onInstructions(thread.id),
        },
        {
          label: "Delete",
          icon: "trash",
          danger: true,
          onSelect: () => {
            confirming = thread.id;
            clearTimeout(confirmTimer);
            // Taken back after a while, but not while the question has the focus (someone reading it out,
            // deciding): then the while starts again once the focus leaves it (Escape takes it back at once).
            const expire = () => {
              const question = list.querySelector(".confirm-delete");
              if (question && question === document.activeElement) {
                question.addEventListener("blur", () => (confirmTimer = setTimeout(expire, 4000)), { once: true });
                return;
              }
              if (confirming !== thread.id) return;
              confirming = undefined;
              render();
            };
            confirmTimer = setTimeout(expire, 4000);
            render();
            list.querySelector<HTMLButtonElement>(".confirm-delete")?.focus();
          },
        },
      ],
    }).el;
  }

  function rowOf(id: string): HTMLElement | null | undefined {
    return list.querySelector(`[data-thread-id="${CSS.escape(id)}"]`)?.parentElement;
  }

  /**
   * The rows on show, by thread id, with what each was drawn from besides its time. A row whose thread changed
   * only its time (a run's last write touches it, another tab's too) is kept and its time redrawn in place: a
   * row drawn anew between a press and its release lost the click (the two landed on different elements), and a
   * rename in progress lost what was typed.
   */
  const rows = new Map<string, { drawn: string; li: HTMLLIElement }>();

  function rowFor(thread: SidebarThread): HTMLLIElement {
    // A row being renamed is its input, kept whatever else changed (another tab renamed the thread, or edited its
    // first message): drawn anew, it lost what was typed, and its input's blur saved the text half typed.
    const drawn =
      editing === thread.id
        ? "editing"
        : JSON.stringify([thread.title, thread.id === currentId, confirming === thread.id]);
    const known = rows.get(thread.id);
    if (known?.drawn === drawn) {
      const time = known.li.querySelector("time");
      const at = new Date(thread.updatedAt).toISOString();
      if (time && time.dateTime !== at) time.dateTime = at;
      const text = relativeTime(thread.updatedAt);
      if (time && time.textContent !== text) time.textContent = text;
      return known.li;
    }
    const li = item(thread);
    rows.set(thread.id, { drawn, li });
    return li;
  }

  function render(): void {
    // A row's menu is open: redrawn once it closes (a new row would drop the menu and its focus).
    stale = menuOpen;
    if (menuOpen) return;
    const shown = matches ? threads.filter((thread) => matches!.has(thread.id)) : threads;
    // A button that had the focus in a row drawn anew (or moved) gets it back, in the row now on show.
    const focused = document.activeElement;
    const kept = focused instanceof HTMLButtonElement && list.contains(focused) ? focused.className : undefined;
    const keptId = kept && focused!.closest("li")?.querySelector<HTMLElement>("[data-thread-id]")?.dataset.threadId;
    const next = shown.map(rowFor);
    // Pressed: rows redraw their times in place (rowFor), but none moves, comes or goes until the release.
    stale = pressed && (next.length !== list.children.length || next.some((li, i) => list.children[i] !== li));
    if (stale) return;
    const showing = new Set(shown.map((thread) => thread.id));
    for (const id of rows.keys()) if (!showing.has(id)) rows.delete(id);
    // The thread being renamed went (deleted in another tab, or out of a search's matches): the rename ends
    // unsaved before its input leaves the document, whose blur would otherwise save it and draw the list again
    // in the middle of this draw.
    if (editing !== undefined && !showing.has(editing)) editing = undefined;
    // Rows no longer on show go, then the rows out of place move, from the last up, each before the row that
    // follows it. The row holding the focus never moves (the others move around it): moved, a rename's input
    // blurred, saving what was half typed and drawing the list again in the middle of this draw.
    const keep = new Set(next);
    for (const child of [...list.children]) if (!keep.has(child as HTMLLIElement)) child.remove();
    const pinned = next.find((li) => li.contains(document.activeElement));
    for (let i = next.length - 1; i >= 0; i--) {
      const li = next[i]!;
      const after = next[i + 1] ?? null;
      if (li !== pinned && (li.parentNode !== list || li.nextElementSibling !== after)) list.insertBefore(li, after);
    }
    if (keptId && document.activeElement !== focused)
      rowOf(keptId)?.querySelector<HTMLButtonElement>(`button[class="${kept}"]`)?.focus();
    empty.hidden = threads.length > 0;
    noMatch.hidden = !matches || shown.length > 0;
  }

  // Keep "5 min ago" true.
  setInterval(() => {
    if (!editing) render();
  }, 30_000);

  return {
    el,
    /** The sync status line ("Synced", "Can't reach the sync server, 3 changes waiting", …). */
    setSyncStatus(text: string, state: string): void {
      syncStatus.textContent = text;
      syncStatus.dataset.state = state;
    },
    update(next: SidebarThread[], current: string): void {
      threads = next;
      currentId = current;
      // A thread changed: a search on screen looks again (its messages may now match).
      if (search.value.trim()) runSearch();
      else render();
    },
    /** Puts the focus in the search field. */
    focusSearch(): void {
      search.focus();
      search.select();
    },
    setCurrent(id: string): void {
      currentId = id;
      render();
    },
  };
}
