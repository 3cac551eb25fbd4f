/**
 * The app's keyboard: Escape closes what is open (the phone's drawer, then
 * History), and the shortcuts people know from other chat apps: Ctrl+K (⌘K)
 * searches the threads, Ctrl+Shift+O (⌘⇧O) starts a new chat, Shift+Escape
 * puts the focus in the composer.
 */

/** What the keys act on; the App is one. */
export interface KeyTarget {
  /** While the settings dialog is open, its own Escape closes it and shortcuts wait. */
  readonly settings: { readonly el: { readonly open: boolean } };
  readonly chat: { focus(): void };
  readonly historyOpen: boolean;
  /** Closes the phone's drawer if it is open (`focusMenu`: the focus goes to the menu button); says whether it was. */
  closeDrawer(focusMenu: boolean): boolean;
  setHistory(open: boolean): void;
  /** Shows the thread list (drawer or column) and focuses its search. */
  searchThreads(): void;
  newThread(): void;
}

/** Listens on `doc` for the app's keys. */
export function installKeys(doc: Document, target: KeyTarget): void {
  doc.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || target.settings.el.open) return;
    const mod = event.ctrlKey || event.metaKey;
    const key = event.key.toLowerCase();
    if (event.key === "Escape" && event.shiftKey) {
      event.preventDefault();
      target.chat.focus();
    } else if (event.key === "Escape") {
      if (!target.closeDrawer(true) && target.historyOpen) target.setHistory(false);
    } else if (mod && !event.shiftKey && !event.altKey && key === "k") {
      event.preventDefault();
      target.searchThreads();
    } else if (mod && event.shiftKey && !event.altKey && key === "o") {
      event.preventDefault();
      target.newThread();
    }
  });
}
