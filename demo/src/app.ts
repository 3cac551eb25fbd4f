/**
 * The app once a vault is open: wires the session to the UI and keeps every
 * open tab live: the sidebar from Dexie's `liveQuery`, the open thread from
 * the saver's change feed (which carries other tabs' writes over a
 * BroadcastChannel). The page's layout is in app-shell.ts, starting runs in
 * app-runs.ts, drawing the open thread in app-view.ts, the History panel's
 * behaviour in app-history.ts, moving to a lock change's session in app-lock.ts.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { ulid } from "ulid";
import { forkViewed, showHistoryPanel, toggleHistory, viewCheckpoint } from "./app-history.js";
import { decide, runOnCurrent, sendMessage } from "./app-runs.js";
import { createThreadInstructions } from "./app-instructions.js";
import { installKeys } from "./app-keys.js";
import { drawBranches, refreshView, type Shown } from "./app-view.js";
import { closeDrawer, createShell, phoneScreen, roomForHistory, sidebarShown, toggleSidebar } from "./app-shell.js";
import { BranchCache } from "./branches.js";
import { messageOf } from "./errors.js";
import type { Session } from "./session.js";
import { titlePlace } from "./settings.js";
import { createThreadDrafts, type CardEdits, type MessageEdit } from "./drafts.js";
import { describeSync } from "./sync.js";
import { createThreadSearch } from "./thread-search.js";
import { TitleCache } from "./thread-titles.js";
import { debouncedTouch, type DemoDB, type ThreadRow } from "./threads-db.js";
import type { Row } from "./timeline.js";
import { watchIdle } from "./auto-lock.js";
import { lockEveryTab, lockIdentity, onLockElsewhere, reloadLocked } from "./lock-now.js";
import { replaceSession, watchLockRecord } from "./app-lock.js";
import { createChat } from "./ui/chat.js";
import { createHistory } from "./ui/history.js";
import { createSettings } from "./ui/settings.js";
import { createSidebar, type SidebarThread } from "./ui/sidebar.js";

/** The page's own title (index.html), after the open thread's in the tab. */
const APP_TITLE = "IndexedDB LangGraph chat";

function threadFromHash(): string | undefined {
  const match = /^#\/thread\/([0-9A-Za-z]+)$/.exec(location.hash);
  return match?.[1];
}

/** The running app: one per page, drawn into `root`. */
export class App {
  session: Session;
  currentId: string;
  viewing: { id: string } | undefined;
  historyOpen = false;
  threads: SidebarThread[] = [];
  rows: Row[] = [];
  historyReads = 0;
  readonly streamed = new Map<string, string>();
  /** The open thread's checkpoint tree, for the branch switchers (read through whichever session is current). */
  readonly branches = new BranchCache((threadId) => this.session.timeline(threadId));
  /** A lock change of this tab is going on (see app-lock.ts). */
  locking = false;
  /** The lock this tab runs under: another's, written by another tab, sends it to the lock screen. */
  knownLock: string;
  readonly #titles = new TitleCache();
  #unsubscribe: () => void = () => undefined;
  refreshSeq = 0;
  /** The conversation on screen at the latest state, idle: where branch switchers may go. */
  shown: Shown | undefined;
  /** Stops the auto-lock's idle watch (only a locked app has one). */
  #unwatchIdle: (() => void) | undefined;
  /** Stops showing the session's sync status. */
  #unsyncStatus: (() => void) | undefined;
  /** Stops watching whether another tab runs the open thread. */
  #unwatchElsewhere: (() => void) | undefined;
  /** Another tab is running the open thread: its turn in flight is not "cut short". */
  busyElsewhere = false;
  #refreshTimer: ReturnType<typeof setTimeout> | undefined;
  /** The sidebar's "last updated" of the threads this tab writes (see threads-db.ts). */
  readonly #touches = debouncedTouch((id) => this.db.touch(id));
  /** The thread list was collapsed to make room for History (a tablet): it comes back when History closes. */
  #sidebarGaveWay = false;
  /**
   * What was typed in each thread's composer, approval card and message editor, kept across a reload (sealed
   * when locked).
   */
  readonly #typed = createThreadDrafts();

  readonly sidebar = createSidebar({
    onNew: () => this.newThread(),
    onOpen: (id) => this.openThread(id),
    onRename: (id, title) =>
      void this.rename(id, title).catch((e: unknown) => this.chat.showError(`Could not rename: ${messageOf(e)}`)),
    onDelete: (id) =>
      void this.deleteThread(id).catch((e: unknown) => this.chat.showError(`Could not delete: ${messageOf(e)}`)),
    onSearch: (query) => this.#search.matching(this.threads, query),
    onInstructions: (id) => this.editInstructions(id),
  });
  /** The threads' custom instructions: the note above the chat and their editor. */
  readonly instructions = createThreadInstructions(this);
  readonly #search = createThreadSearch(
    async (id) => ((await this.session.state(id)).values as { messages?: BaseMessage[] }).messages ?? [],
  );
  readonly chat = createChat(
    {
      onSend: (text) => sendMessage(this, text),
      onDraft: (text) => void this.#typed.composer.save(this.session.vault, this.currentId, text),
      onApprove: (memories, questionId) => {
        this.#typed.cards.clear(this.currentId);
        decide(this, { decision: "approve", memories }, questionId);
      },
      onReject: (reason, questionId) => {
        this.#typed.cards.clear(this.currentId);
        decide(this, { decision: "reject", reason }, questionId);
      },
      onCardEdited: (edits, questionId) =>
        void this.#typed.cards.save(this.session.vault, this.currentId, questionId, edits),
      onFork: () => void forkViewed(this),
      onBackToLatest: () => void viewCheckpoint(this, undefined),
      onStop: () => this.session.stop(this.currentId),
      onRetry: () => runOnCurrent(this, (id, events) => this.session.retry(id, events)),
      onRegenerate: () => runOnCurrent(this, (id, events) => this.session.regenerate(id, events)),
      onEdit: (index, text) => runOnCurrent(this, (id, events) => this.session.edit(id, index, text, events)),
      onEditing: (edit) => void this.#typed.edits.save(this.session.vault, this.currentId, edit),
    },
    this.instructions.note,
  );
  readonly history = createHistory({
    onView: (id) => {
      const shown = viewCheckpoint(this, id);
      // On a phone the panel covers the chat: step aside, keeping the selection, so Fork is in reach
      // (and takes the focus, which was on a row that is now hidden).
      if (phoneScreen.matches) {
        showHistoryPanel(this, false);
        void shown.then(() => this.chat.focusFork());
      }
    },
    onClose: () => this.setHistory(false),
  });
  readonly settings = createSettings({
    session: () => this.session,
    threads: () => this.threads,
    lock: (passphrase) => replaceSession(this, () => this.session.lock(passphrase)),
    lockNow: lockEveryTab,
    changePassphrase: (current, next) => replaceSession(this, () => this.session.changePassphrase(current, next)),
    removeLock: () => replaceSession(this, () => this.session.unlockForGood()),
    openThread: (id) => this.openThread(id),
  });
  readonly shell = createShell({
    sidebar: this.sidebar.el,
    chat: this.chat.el,
    history: this.history.el,
    settings: this.settings.el,
    onMenu: () => this.toggleSidebar(),
    onHistory: () => {
      this.setHistory(!this.historyOpen);
      // The panel comes last in the page: without this, the keyboard reaches it after everything else.
      if (this.historyOpen) this.history.focus();
    },
    onSettings: () => this.settings.open(),
    onScrim: () => this.closeDrawer(true),
  });

  /**
   * @param db the demo's own database (threads, settings, the lock record)
   * @param root the element the app replaces the contents of
   * @param session the open vault's session
   * @param lastThreadId the thread to open when the address names none
   */
  constructor(
    readonly db: DemoDB,
    root: HTMLElement,
    session: Session,
    lastThreadId: string | undefined,
  ) {
    this.session = session;
    this.knownLock = lockIdentity(session.vault.salt);
    this.currentId = threadFromHash() ?? lastThreadId ?? ulid();
    root.replaceChildren(this.shell.el, this.instructions.dialog);
    window.addEventListener("hashchange", () => {
      const id = threadFromHash();
      if (id && id !== this.currentId) this.openThread(id, false);
    });
    installKeys(document, this);
    db.liveThreads().subscribe({
      next: (rows) => void this.showThreads(rows),
      error: (e: unknown) => console.warn("threads query", e),
    });
    // "Lock now" in another tab locks this one too.
    onLockElsewhere(() => reloadLocked("Locked from another tab."));
    watchLockRecord(this);
    this.attach(session);
    this.openThread(this.currentId);
    // Ready to type, except on a phone: there the focus would open its keyboard over the page unasked.
    if (!phoneScreen.matches) this.chat.focus();
  }

  /** Listens to the session's saver: other tabs' writes refresh the open thread. */
  attach(session: Session): void {
    this.#unsubscribe();
    const before = this.session.vault;
    this.session = session;
    // A lock change: the drafts are sealed again for the new vault (the old key no longer opens them).
    if (before !== session.vault)
      this.#typed
        .reseal(before, session.vault)
        .catch((error: unknown) => console.warn("drafts not sealed again", error));
    // The open thread's runs are watched through the new session: on its databases (a lock, or its removal,
    // moved the data), told apart from its own runs.
    if (this.#unwatchElsewhere) this.#watchElsewhere(this.currentId);
    this.shell.lockBadge.hidden = !session.vault.locked;
    this.#unwatchIdle?.();
    this.#unwatchIdle = session.vault.locked
      ? watchIdle(
          () => reloadLocked("Locked after a while without input (Settings, Auto-lock)."),
          () =>
            this.threads.some((thread) => this.session.isRunning(thread.id)) || this.session.isRunning(this.currentId),
        )
      : undefined;
    this.#titles.clear();
    this.#search.clear();
    this.#unsyncStatus?.();
    this.#unsyncStatus = session.onSyncStatus((status) =>
      this.sidebar.setSyncStatus(describeSync(status, navigator.onLine), status.state),
    );
    this.branches.invalidate();
    this.#unsubscribe = session.saver.subscribe((change) => {
      // The branch cache reads new checkpoints from the newest end; anything else changed the tree under it.
      if (change.remote || change.kind !== "put" || !this.session.isRunning(change.threadId))
        this.branches.invalidate(change.threadId);
      if (!change.remote && change.kind === "put") this.#touches.schedule(change.threadId);
      if (change.remote && change.threadId === this.currentId) {
        if (change.kind === "delete")
          this.chat.showError("This thread was deleted in another tab. Sending a message here starts it afresh.");
        this.scheduleRefresh();
      } else if (change.threadId === this.currentId && !this.session.isRunning(change.threadId)) {
        // Written here but not by a run of this tab: sync pulled another device's turns.
        this.scheduleRefresh();
      }
    });
  }

  // ------------------------------------------------------------ threads

  async showThreads(rows: ThreadRow[]): Promise<void> {
    const threads = await this.#titles.threads(rows, this.session.vault);
    this.threads = threads;
    this.sidebar.update(threads, this.currentId);
    this.updateHeading();
    // Another tab may have edited the open thread's instructions.
    void this.instructions.show();
  }

  /** A thread's title, as the sidebar shows it. */
  titleOf(threadId: string): string {
    return this.threads.find((t) => t.id === threadId)?.title ?? "New thread";
  }

  showError(message: string): void {
    this.chat.showError(message);
  }

  /** The top bar's heading and the tab's title follow the open thread. */
  updateHeading(): void {
    const title = this.titleOf(this.currentId);
    this.shell.heading.textContent = title;
    document.title = `${title} · ${APP_TITLE}`;
  }

  /** Opens a thread; `push`: a new entry in the tab's history, so Back returns to the previous thread. */
  openThread(id: string, push = true): void {
    // What was typed stays with its thread (kept as typed, by onDraft): the composer shows this thread's.
    if (id !== this.currentId || !this.chat.draft) {
      this.chat.replaceDraft("");
      void this.#typed.composer.load(this.session.vault, id).then((text) => {
        if (id === this.currentId) this.chat.setDraft(text);
      });
    }
    // The other thread's card: kept across draws (same question, or none asked), it showed its typing here.
    if (id !== this.currentId) this.chat.showApproval(undefined);
    this.currentId = id;
    this.viewing = undefined;
    if (threadFromHash() !== id) {
      if (push && threadFromHash()) history.pushState(null, "", `#/thread/${id}`);
      else history.replaceState(null, "", `#/thread/${id}`);
    }
    this.sidebar.setCurrent(id);
    this.updateHeading();
    this.#watchElsewhere(id);
    this.chat.showError(undefined);
    this.closeDrawer();
    void this.instructions.show();
    void this.refresh();
  }

  /**
   * Watches whether another tab runs thread `id`, through the session: on its databases (the run locks and
   * notices are named after them), and not counting its own runs. A new session watches again (see attach).
   */
  #watchElsewhere(id: string): void {
    this.#unwatchElsewhere?.();
    this.busyElsewhere = false;
    this.chat.setBusyElsewhere(false);
    this.#unwatchElsewhere = this.session.watchElsewhere(id, (busy) => {
      if (id !== this.currentId) return;
      this.busyElsewhere = busy;
      this.chat.setBusyElsewhere(busy);
      // Busy: the turn's problem line goes. Done: its answer (or, if that tab died, the cut-short turn) shows.
      this.scheduleRefresh();
    });
  }

  /** Shows the thread list (a phone's drawer, a collapsed column) with the focus in its search. */
  searchThreads(): void {
    if (!sidebarShown()) this.toggleSidebar(true);
    this.sidebar.focusSearch();
  }

  newThread(): void {
    this.openThread(ulid());
    this.chat.focus();
  }

  async rename(id: string, title: string): Promise<void> {
    await this.db.threads.update(id, { title: await this.session.vault.seal(title, titlePlace(id)) });
  }

  async deleteThread(id: string): Promise<void> {
    this.#typed.clear(id);
    this.#touches.cancel(id);
    await this.session.deleteThread(id);
    if (id === this.currentId) {
      const next = this.threads.find((t) => t.id !== id);
      if (next) this.openThread(next.id);
      else this.newThread();
    }
  }

  // ------------------------------------------------------------ the open thread

  scheduleRefresh(): void {
    clearTimeout(this.#refreshTimer);
    this.#refreshTimer = setTimeout(() => {
      if (!this.session.isRunning(this.currentId)) void this.refresh();
    }, 50);
  }

  /** What was typed in the thread's approval card for its question `questionId` before a reload, if anything. */
  keptCard(threadId: string, questionId: string | undefined): Promise<CardEdits | undefined> {
    return this.#typed.cards.load(this.session.vault, threadId, questionId);
  }

  /** The message editor open on the thread before a reload, if any. */
  keptEdit(threadId: string): Promise<MessageEdit | undefined> {
    return this.#typed.edits.load(this.session.vault, threadId);
  }

  /** Reads the open thread again and draws it (see app-view.ts). */
  refresh(): Promise<void> {
    return refreshView(this);
  }

  /** Draws the branch switchers of the conversation on screen from the cache. */
  drawBranches(): void {
    drawBranches(this);
  }

  // ------------------------------------------------------------ layout, lock

  /** Opens or closes History, making room for it (see {@link roomForHistory}). */
  setHistory(open: boolean): void {
    this.#sidebarGaveWay = roomForHistory(this.shell.menuButton, this.sidebar.el, open, this.#sidebarGaveWay);
    toggleHistory(this, open);
  }

  toggleSidebar(open?: boolean): void {
    toggleSidebar(this.shell.menuButton, open);
  }

  /**
   * Opens a thread's instructions editor. On a phone the thread opens first
   * (closing the drawer): the drawer stayed over the chat once the editor
   * closed, hiding the note just saved. Wider screens keep the open thread.
   */
  editInstructions(id: string): void {
    if (phoneScreen.matches) {
      if (id !== this.currentId) this.openThread(id);
      else this.closeDrawer();
    }
    void this.instructions.edit(id);
  }

  /** Closes the phone's drawer; says whether it was open. */
  closeDrawer(focusMenu = false): boolean {
    return closeDrawer(this.shell.menuButton, this.sidebar.el, focusMenu);
  }
}
