/**
 * The settings dialog's data sections: bytes per thread (the saver's own
 * count) and for the origin, persistent storage, export/import of a thread,
 * and the saved memories.
 */
import { DecryptionError, THREAD_EXPORT_EXTENSION, ThreadFileError } from "../lib.js";
import { databasesOf } from "../settings.js";
import { databaseBytes, originUsage, saverBytes } from "../storage.js";
import { field, formatBytes, h, replace, setStatus } from "./dom.js";
import { icon } from "./icons.js";
import type { Session } from "../session.js";
import type { SidebarThread } from "./sidebar.js";

/** What the settings dialog asks of the app (it lives here, below settings.ts, which imports this file). */
export interface SettingsContext {
  session(): Session;
  threads(): SidebarThread[];
  /** Locks (migrating the data); resolves when the new session is in place. */
  lock(passphrase: string): Promise<void>;
  /** Forgets the key in this tab: back to the lock screen. */
  lockNow(): void;
  /** A new passphrase for the locked data. */
  /** Re-keys the vault with `next`, once `current` is proved to be the passphrase in use. */
  changePassphrase(current: string, next: string): Promise<void>;
  /** Decrypts everything back into the plain databases and removes the lock. */
  removeLock(): Promise<void>;
  openThread(threadId: string): void;
}

function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * Why an import failed, in the user's words: the package's messages name
 * its file format and API, which mean nothing here (the details go to the
 * console).
 */
function importFailure(error: unknown): string {
  console.warn("Import failed:", error);
  if (error instanceof ThreadFileError)
    return "Could not import: this file is not a conversation exported from this app, or it is damaged.";
  if (error instanceof DecryptionError)
    return "Could not import: this conversation was exported from a vault with another passphrase, or the file was changed. Nothing was imported.";
  return `Could not import: ${(error as Error)?.message ?? String(error)}`;
}

function safeName(title: string): string {
  return (
    title
      .replace(/[^\p{L}\p{N}]+/gu, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "thread"
  );
}

/**
 * The storage totals before anything is saved; `own`: the bytes of the databases' own records (their
 * format mark, and marks of threads deleted, a locked app's key check: never the user's data).
 */
function nothingSaved(own: number): string {
  return own > 0
    ? `Nothing saved yet (the ${formatBytes(own)} here are the databases' own records)`
    : "Nothing saved yet";
}

/** Bytes per thread and in total, persistence, and export/import of a thread; `onImported` gets the copy's id. */
export function storageSection(context: SettingsContext, onImported: (threadId: string) => void): HTMLElement {
  const session = context.session();
  const table = h("tbody", {}, h("tr", {}, h("td", { colSpan: 3, class: "muted" }, "Measuring…")));
  const totals = h("p", { class: "muted", testid: "storage-totals" });
  const persist = h("p", {});
  const importInput = h("input", {
    type: "file",
    accept: `${THREAD_EXPORT_EXTENSION},application/vnd.langgraph-thread`,
    id: "import-file",
  });
  const importStatus = h("p", { class: "status", role: "status" });
  // Under the table of threads it is about (it was written in the import's line, under the file field).
  const exportStatus = h("p", { class: "status", role: "status", testid: "export-status" });
  /**
   * Says how an import went, in view: on a phone the file field is at the dialog's foot, the answer below it.
   * `failed`: in the colour of errors, as setStatus shows a failure.
   */
  function showImport(failed: boolean, ...children: (string | HTMLElement)[]): void {
    importStatus.classList.toggle("failed", failed);
    replace(importStatus, ...children);
    importStatus.scrollIntoView({ block: "nearest" });
  }
  /** Imports `file`; a conversation here already is said, with a way to it and a copy only when asked for. */
  function importFile(file: File, copy: boolean): void {
    showImport(false, "Importing…");
    session.importThread(file, file.name, copy).then(
      ({ threadId, alreadyHere }) => {
        importInput.value = "";
        if (!alreadyHere) {
          setStatus(importStatus, "Imported.");
          onImported(threadId);
          return;
        }
        const title = context.threads().find((thread) => thread.id === threadId)?.title ?? "a thread";
        showImport(
          false,
          `This conversation is already here: “${title}”. Nothing was imported. `,
          h("button", { type: "button", onclick: () => onImported(threadId) }, "Open it"),
          " ",
          h("button", { type: "button", onclick: () => importFile(file, true) }, "Import a copy anyway"),
        );
      },
      (error: unknown) => {
        showImport(true, importFailure(error));
        importInput.value = "";
      },
    );
  }
  importInput.addEventListener("change", () => {
    const file = importInput.files?.[0];
    if (file) importFile(file, false);
  });

  async function measure(): Promise<void> {
    const names = databasesOf(session.vault);
    const [saver, memory, origin] = await Promise.all([
      saverBytes(names.saver),
      databaseBytes(names.store),
      originUsage(),
    ]);
    const rows = context.threads().map((thread) =>
      h(
        "tr",
        {},
        h("th", { scope: "row" }, thread.title),
        h("td", { class: "num", testid: "thread-bytes" }, formatBytes(saver.perThread.get(thread.id) ?? 0)),
        h(
          "td",
          {},
          h(
            "button",
            {
              type: "button",
              "aria-label": `Export “${thread.title}”`,
              onclick: () =>
                session.exportThread(thread.id).then(
                  (file) => {
                    const name = `${safeName(thread.title)}${THREAD_EXPORT_EXTENSION}`;
                    download(file, name);
                    // Said where the click was: a download can go unseen (a phone's, a browser that asks
                    // nothing), and a locked app's export is the one copy not encrypted.
                    setStatus(
                      exportStatus,
                      `Exported “${thread.title}” to ${name}.` +
                        (session.vault.locked ? " The file is not encrypted." : ""),
                    );
                  },
                  (error: unknown) => setStatus(exportStatus, `Could not export: ${(error as Error).message}`, true),
                ),
            },
            "Export",
          ),
        ),
      ),
    );
    // Before the first memory the store holds only its format mark: "52 B" there read as something saved.
    const memories = memory.total > memory.own;
    rows.push(
      h(
        "tr",
        { class: "memory-row" },
        h("th", { scope: "row" }, "Memories (store)"),
        h("td", { class: "num", testid: "memory-bytes" }, memories ? formatBytes(memory.total) : "none yet"),
        h("td"),
      ),
    );
    replace(table, ...rows);
    replace(
      totals,
      // Saved: a thread listed, or a checkpoint store row not its own (a thread the list does not show yet).
      rows.length > 1 || saver.total > saver.own || memories
        ? `Checkpoints: ${formatBytes(saver.total)} · memories: ${memories ? formatBytes(memory.total) : "none yet"}`
        : nothingSaved(saver.own + memory.own),
      origin.usage !== undefined
        ? ` · this site uses ${formatBytes(origin.usage)} of ${formatBytes(origin.quota ?? 0)} (navigator.storage.estimate)`
        : "",
    );
    renderPersist(origin.persisted);
    // The table grew above an import's answer said meanwhile (a phone's dialog scrolls): keep it in view.
    if (importStatus.childNodes.length > 0) importStatus.scrollIntoView({ block: "nearest" });
  }

  function renderPersist(persisted: boolean | undefined): void {
    if (persisted) {
      replace(persist, "✓ Storage is persistent: the browser will not evict it under pressure.");
      return;
    }
    replace(
      persist,
      "Storage is best-effort: the browser may evict it when space runs low. ",
      h(
        "button",
        {
          type: "button",
          onclick: () => {
            // Never awaited on a critical path: some browsers prompt and wait for the user.
            void navigator.storage
              ?.persist?.()
              .then((granted) =>
                granted
                  ? renderPersist(true)
                  : replace(
                      persist,
                      "The browser declined to make storage persistent (it may grant it later, e.g. once the site is bookmarked or installed).",
                    ),
              )
              .catch(() => undefined);
          },
        },
        "Request persistent storage",
      ),
    );
  }

  measure().catch((error: unknown) => replace(totals, `Could not measure: ${(error as Error).message}`));
  return h(
    "section",
    { "aria-labelledby": "storage-h" },
    h("h3", { id: "storage-h" }, "Storage"),
    h(
      "table",
      { class: "storage" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "Thread"),
          h("th", { scope: "col", class: "num" }, "Bytes"),
          h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Export")),
        ),
      ),
      table,
    ),
    // A locked app encrypts what it keeps; an export (a plain file, so that it imports anywhere, even after
    // the passphrase changed or the lock was removed) would be the one plaintext copy, unsaid.
    session.vault.locked
      ? h(
          "p",
          { class: "muted", testid: "export-note" },
          "Exported files are not encrypted: anyone who has the file can read the conversation. Keep it somewhere safe.",
        )
      : null,
    exportStatus,
    totals,
    persist,
    field("Import a thread file", importInput),
    importStatus,
  );
}

/** The saved memories, each with a Forget button. */
export function memorySection(context: SettingsContext): HTMLElement {
  const session = context.session();
  const list = h("ul", { class: "memories" }, h("li", { class: "muted" }, "Loading…"));
  const load = async () => {
    const memories = await session.memories();
    if (memories.length === 0) return replace(list, h("li", { class: "muted" }, "Nothing saved yet."));
    replace(
      list,
      ...memories.map((memory) =>
        h(
          "li",
          {},
          h("span", {}, memory.text),
          h(
            "button",
            {
              type: "button",
              class: "icon danger",
              "aria-label": `Forget “${memory.text}”`,
              onclick: () => void session.forget(memory.key).then(load, () => undefined),
            },
            icon("trash"),
          ),
        ),
      ),
    );
  };
  load().catch(() => replace(list, h("li", { class: "muted" }, "Could not read the memories.")));
  return h("section", { "aria-labelledby": "memory-h" }, h("h3", { id: "memory-h" }, "Memories"), list);
}
