/** The sidebar: new thread, and the threads (title, last updated), each renamable and deletable. */
import { h, relativeTime, replace } from "./dom.js";
import { icon } from "./icons.js";

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
    placeholder: "Search threads (Ctrl+K)",
    "aria-label": "Search threads, titles and messages",
    autocomplete: "off",
  });
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
        if (event.key === "Enter") finish(true);
        if (event.key === "Escape") finish(false);
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
      h(
        "button",
        {
          class: "icon",
          type: "button",
          title: "Rename",
          "aria-label": `Rename “${thread.title}”`,
          onclick: () => {
            editing = thread.id;
            render();
          },
        },
        icon("pencil"),
      ),
      h(
        "button",
        {
          class: "icon",
          type: "button",
          testid: "thread-instructions",
          title: "Instructions",
          "aria-label": `Instructions for “${thread.title}”`,
          onclick: () => actions.onInstructions(thread.id),
        },
        icon("note"),
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
                actions.onDelete(thread.id);
              },
              // Escape takes the question back, and the focus returns to the delete button.
              onkeydown: (event: KeyboardEvent) => {
                if (event.key !== "Escape") return;
                event.preventDefault();
                confirming = undefined;
                clearTimeout(confirmTimer);
                render();
                const row = list.querySelector(`[data-thread-id="${CSS.escape(thread.id)}"]`)?.parentElement;
                row?.querySelector<HTMLButtonElement>(".icon.danger")?.focus();
              },
            },
            "Delete?",
          )
        : h(
            "button",
            {
              class: "icon danger",
              type: "button",
              title: "Delete",
              "aria-label": `Delete “${thread.title}”`,
              onclick: () => {
                confirming = thread.id;
                clearTimeout(confirmTimer);
                confirmTimer = setTimeout(() => {
                  confirming = undefined;
                  render();
                }, 4000);
                render();
                list.querySelector<HTMLButtonElement>(".confirm-delete")?.focus();
              },
            },
            icon("trash"),
          ),
    );
  }

  function render(): void {
    const shown = matches ? threads.filter((thread) => matches!.has(thread.id)) : threads;
    replace(list, ...shown.map(item));
    empty.hidden = threads.length > 0;
    noMatch.hidden = !matches || shown.length > 0;
  }

  // Keep "5 min ago" true.
  setInterval(() => {
    if (!editing) render();
  }, 30_000);

  return {
    el,
    /** The sync status line ("Synced", "Offline, 3 changes waiting", …). */
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
