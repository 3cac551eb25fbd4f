/**
 * The demo's entry: opens the vault (asking for the passphrase when the app
 * is locked), then wires the session to the UI and keeps every open tab live:
 * the sidebar from Dexie's `liveQuery`, the open thread from the saver's
 * change feed (which carries other tabs' writes over a BroadcastChannel).
 */
import type { BaseMessage } from "@langchain/core/messages";
import { ulid } from "ulid";
import { APPROVAL_NODE, pendingApproval } from "./agent.js";
import { errorText } from "./errors.js";
import { BranchCache } from "./branches.js";
import { countMessages, rowOf, type Row } from "./timeline.js";
import { RunNotStarted, Session, deleteDatabase, type RunEvent } from "./session.js";
import { DATABASES, plainVault, titlePlace, unlock } from "./settings.js";
import { DemoDB, type ThreadRow } from "./threads-db.js";
import { createChat } from "./ui/chat.js";
import { h } from "./ui/dom.js";
import { icon } from "./ui/icons.js";
import { createHistory } from "./ui/history.js";
import { branchSwitcher } from "./ui/messages.js";
import { createLockScreen } from "./ui/lock.js";
import { createSettings } from "./ui/settings.js";
import { createSidebar, type SidebarThread } from "./ui/sidebar.js";
import { describeSync } from "./sync.js";
import { watchIdle } from "./auto-lock.js";
import { isV1Lock, upgradeV1Lock } from "./vault-upgrade.js";
import { finishPendingDeletes } from "./vault-migration.js";
import { vaultNotice } from "./ui/lock.js";

const db = new DemoDB();
/**
 * While the history streams in, it is redrawn at most this often (ms), after
 * its first rows: each redraw rebuilds the whole panel, so on a 300-turn
 * thread (read in well under a second) redraws every 250 ms cost more than the
 * final one.
 */
const DRAW_EVERY = 1_000;
const root = document.getElementById("app")!;

/** Identifies a lock by its salt, to notice another tab locking or erasing. */
function lockIdentity(salt: Uint8Array | undefined): string {
  return salt ? Array.from(salt, (b) => b.toString(16).padStart(2, "0")).join("") : "";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function threadFromHash(): string | undefined {
  const match = /^#\/thread\/([0-9A-Za-z]+)$/.exec(location.hash);
  return match?.[1];
}

/** Resolves when the page is idle (Safari has no requestIdleCallback: a short timer there). */
function whenIdle(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof requestIdleCallback === "function") requestIdleCallback(() => resolve(), { timeout: 1_000 });
    else setTimeout(resolve, 50);
  });
}

class App {
  session: Session;
  currentId: string;
  viewing: { id: string } | undefined;
  historyOpen = false;
  threads: SidebarThread[] = [];
  rows: Row[] = [];
  /** The open thread's checkpoint tree, for the branch switchers (read through whichever session is current). */
  readonly branches = new BranchCache((threadId) => this.session.timeline(threadId));
  locking = false;
  knownLock: string;
  readonly #titles = new Map<string, { sealed: unknown; title: string }>();
  #unsubscribe: () => void = () => undefined;
  #refreshSeq = 0;
  /** The conversation on screen at the latest state, idle: where branch switchers may go. */
  #shown: { seq: number; id: string; messages: BaseMessage[] } | undefined;
  /** Stops the auto-lock's idle watch (only a locked app has one). */
  #unwatchIdle: (() => void) | undefined;
  /** Stops showing the session's sync status. */
  #unsyncStatus: (() => void) | undefined;
  /** Stops watching whether another tab runs the open thread. */
  #unwatchElsewhere: (() => void) | undefined;
  /** Another tab is running the open thread: its turn in flight is not "cut short". */
  #busyElsewhere = false;
  #refreshTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #touchTimers = new Map<string, ReturnType<typeof setTimeout>>();

  readonly heading = h("h1", { class: "thread-heading" }, "New thread");
  readonly lockBadge = h(
    "span",
    { class: "lock-badge", title: "Encrypted at rest", hidden: true },
    icon("lock", "Locked: encrypted at rest"),
  );
  readonly menuButton = h(
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
  readonly historyButton = h(
    "button",
    { type: "button", testid: "show-history", "aria-controls": "history", "aria-expanded": "false" },
    "History",
  );
  readonly sidebar = createSidebar({
    onNew: () => this.newThread(),
    onOpen: (id) => this.openThread(id),
    onRename: (id, title) =>
      void this.rename(id, title).catch((e: unknown) => this.chat.showError(`Could not rename: ${messageOf(e)}`)),
    onDelete: (id) =>
      void this.deleteThread(id).catch((e: unknown) => this.chat.showError(`Could not delete: ${messageOf(e)}`)),
  });
  readonly chat = createChat({
    onSend: (text) => this.send(text),
    onApprove: () => this.decide("approve"),
    onReject: () => this.decide("reject"),
    onFork: () => void this.fork(),
    onBackToLatest: () => void this.view(undefined),
    onStop: () => this.session.stop(this.currentId),
    onRetry: () => this.runOnCurrent((id, events) => this.session.retry(id, events)),
    onRegenerate: () => this.runOnCurrent((id, events) => this.session.regenerate(id, events)),
    onEdit: (index, text) => this.runOnCurrent((id, events) => this.session.edit(id, index, text, events)),
  });
  readonly history = createHistory({
    onView: (id) => {
      const shown = this.view(id);
      // On a phone the panel covers the chat: step aside, keeping the selection, so Fork is in reach
      // (and takes the focus, which was on a row that is now hidden).
      if (matchMedia("(max-width: 760px)").matches) {
        this.showHistoryPanel(false);
        void shown.then(() => this.chat.focusFork());
      }
    },
    onClose: () => this.toggleHistory(false),
  });
  #historySeq = 0;
  readonly settings = createSettings({
    session: () => this.session,
    threads: () => this.threads,
    lock: (passphrase) => this.lock(passphrase),
    lockNow: () => location.reload(),
    changePassphrase: (passphrase) => this.replaceSession(() => this.session.changePassphrase(passphrase)),
    removeLock: () => this.replaceSession(() => this.session.unlockForGood()),
    openThread: (id) => this.openThread(id),
  });

  constructor(session: Session, lastThreadId: string | undefined) {
    this.session = session;
    this.knownLock = lockIdentity(session.vault.salt);
    this.currentId = threadFromHash() ?? lastThreadId ?? ulid();
    this.menuButton.addEventListener("click", () => this.toggleSidebar());
    this.historyButton.addEventListener("click", () => {
      this.toggleHistory(!this.historyOpen);
      // The panel comes last in the page: without this, the keyboard reaches it after everything else.
      if (this.historyOpen) this.history.focus();
    });
    const settingsButton = h(
      "button",
      { type: "button", testid: "settings", "aria-haspopup": "dialog", onclick: () => this.settings.open() },
      "Settings",
    );
    root.replaceChildren(
      h(
        "div",
        { class: "app" },
        h(
          "header",
          { class: "topbar" },
          this.menuButton,
          this.heading,
          this.lockBadge,
          h("div", { class: "spacer" }),
          this.historyButton,
          settingsButton,
        ),
        h(
          "div",
          { class: "body" },
          this.sidebar.el,
          h("div", { class: "scrim", onclick: () => this.toggleSidebar(false) }),
          h("main", { class: "main" }, this.chat.el),
          this.history.el,
        ),
        this.settings.el,
      ),
    );
    window.addEventListener("hashchange", () => {
      const id = threadFromHash();
      if (id && id !== this.currentId) this.openThread(id, false);
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.historyOpen && !this.settings.el.open && !event.defaultPrevented)
        this.toggleHistory(false);
    });
    db.liveThreads().subscribe({
      next: (rows) => void this.showThreads(rows),
      error: (e: unknown) => console.warn("threads query", e),
    });
    db.liveLock().subscribe({
      next: (row) => {
        // Another tab locked the app, or erased it: start over from the lock screen.
        if (!this.locking && lockIdentity(row?.salt) !== this.knownLock) location.reload();
      },
      error: (e: unknown) => console.warn("lock query", e),
    });
    this.attach(session);
    this.openThread(this.currentId);
    this.chat.focus();
  }

  /** Listens to the session's saver: other tabs' writes refresh the open thread. */
  attach(session: Session): void {
    this.#unsubscribe();
    this.session = session;
    this.lockBadge.hidden = !session.vault.locked;
    this.#unwatchIdle?.();
    this.#unwatchIdle = session.vault.locked
      ? watchIdle(
          () => location.reload(),
          () =>
            this.threads.some((thread) => this.session.isRunning(thread.id)) || this.session.isRunning(this.currentId),
        )
      : undefined;
    this.#titles.clear();
    this.#unsyncStatus?.();
    this.#unsyncStatus = session.onSyncStatus((status) =>
      this.sidebar.setSyncStatus(describeSync(status), status.state),
    );
    this.branches.invalidate();
    this.#unsubscribe = session.saver.subscribe((change) => {
      // The branch cache reads new checkpoints from the newest end; anything else changed the tree under it.
      if (change.remote || change.kind !== "put" || !this.session.isRunning(change.threadId))
        this.branches.invalidate(change.threadId);
      if (!change.remote && change.kind === "put") this.scheduleTouch(change.threadId);
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
    const threads = await Promise.all(
      rows.map(async (row): Promise<SidebarThread> => {
        const cached = this.#titles.get(row.id);
        let title: string;
        if (cached && sameSealed(cached.sealed, row.title)) title = cached.title;
        else {
          title = await this.session.vault.open(row.title, titlePlace(row.id)).catch(() => "(unreadable title)");
          this.#titles.set(row.id, { sealed: row.title, title });
        }
        return { id: row.id, title, updatedAt: row.updatedAt };
      }),
    );
    this.threads = threads;
    this.sidebar.update(threads, this.currentId);
    this.updateHeading();
  }

  updateHeading(): void {
    this.heading.textContent = this.threads.find((t) => t.id === this.currentId)?.title ?? "New thread";
  }

  /** Opens a thread; `push`: a new entry in the tab's history, so Back returns to the previous thread. */
  openThread(id: string, push = true): void {
    this.currentId = id;
    this.viewing = undefined;
    if (threadFromHash() !== id) {
      if (push && threadFromHash()) history.pushState(null, "", `#/thread/${id}`);
      else history.replaceState(null, "", `#/thread/${id}`);
    }
    this.sidebar.setCurrent(id);
    this.updateHeading();
    this.#unwatchElsewhere?.();
    this.#busyElsewhere = false;
    this.chat.setBusyElsewhere(false);
    this.#unwatchElsewhere = this.session.watchElsewhere(id, (busy) => {
      if (id !== this.currentId) return;
      this.#busyElsewhere = busy;
      this.chat.setBusyElsewhere(busy);
      // Busy: the turn's problem line goes. Done: its answer (or, if that tab died, the cut-short turn) shows.
      this.scheduleRefresh();
    });
    this.chat.showError(undefined);
    this.toggleSidebar(false);
    void this.refresh();
  }

  newThread(): void {
    this.openThread(ulid());
    this.chat.focus();
  }

  async rename(id: string, title: string): Promise<void> {
    await db.threads.update(id, { title: await this.session.vault.seal(title, titlePlace(id)) });
  }

  async deleteThread(id: string): Promise<void> {
    clearTimeout(this.#touchTimers.get(id));
    this.#touchTimers.delete(id);
    await this.session.deleteThread(id);
    if (id === this.currentId) {
      const next = this.threads.find((t) => t.id !== id);
      if (next) this.openThread(next.id);
      else this.newThread();
    }
  }

  /** The sidebar's "last updated": touched by the tab that writes, seen by all through liveQuery. */
  scheduleTouch(threadId: string): void {
    clearTimeout(this.#touchTimers.get(threadId));
    this.#touchTimers.set(
      threadId,
      setTimeout(() => {
        this.#touchTimers.delete(threadId);
        void db.touch(threadId).catch((e: unknown) => console.warn("touch", e));
      }, 100),
    );
  }

  // ------------------------------------------------------------ the open thread

  scheduleRefresh(): void {
    clearTimeout(this.#refreshTimer);
    this.#refreshTimer = setTimeout(() => {
      if (!this.session.isRunning(this.currentId)) void this.refresh();
    }, 50);
  }

  async refresh(): Promise<void> {
    const seq = ++this.#refreshSeq;
    const id = this.currentId;
    try {
      const snapshot = await this.session.state(id, this.viewing?.id);
      if (seq !== this.#refreshSeq) return;
      const messages = ((snapshot.values as { messages?: BaseMessage[] }).messages ?? []) as BaseMessage[];
      const running = this.session.isRunning(id);
      const paused = !this.viewing && snapshot.next.includes(APPROVAL_NODE);
      this.chat.setRunning(running && !this.viewing);
      const interactive = !this.viewing && !running && !paused;
      this.chat.showMessages(messages, { interactive });
      if (interactive) void this.showBranches(seq, id, messages);
      // A turn another tab is answering still has steps due: not a problem, and Retry would answer it twice.
      const problem = this.viewing || this.#busyElsewhere ? undefined : this.session.problem(id, snapshot);
      this.chat.showProblem(problem);
      this.chat.showApproval(paused ? pendingApproval(messages) : undefined, running);
      this.chat.showViewing(this.viewing && { step: snapshot.metadata?.step ?? 0, messageCount: messages.length });
      this.chat.setDisabled(
        this.viewing
          ? "Viewing an older checkpoint (read-only)"
          : paused
            ? "Approve or reject the memory first"
            : undefined,
      );
      if (this.historyOpen) await this.refreshHistory();
    } catch (error) {
      if (seq === this.#refreshSeq) this.chat.showError(`Could not read the thread: ${messageOf(error)}`);
    }
  }

  /**
   * Adds the branch switchers once the thread's tree is read: after the
   * messages, so a long thread shows at once (only a thread with branches is drawn again).
   */
  async showBranches(seq: number, id: string, messages: BaseMessage[]): Promise<void> {
    this.#shown = { seq, id, messages };
    // With History open, its own read of the whole thread feeds the cache (see refreshHistory): one read, not two.
    if (this.historyOpen) return;
    const stale = () => seq !== this.#refreshSeq || this.historyOpen;
    try {
      // When the page is idle: the conversation and the History panel come first.
      await whenIdle();
      if (stale() || !(await this.branches.update(id, stale))) return;
      this.drawBranches();
    } catch (error) {
      // The conversation is shown already; only the switchers are missing.
      console.warn("branches", error);
    }
  }

  /** Draws the switchers of the conversation last shown, from the cache, if it has branches. */
  drawBranches(): void {
    const shown = this.#shown;
    if (!shown || shown.seq !== this.#refreshSeq) return;
    const { id, messages } = shown;
    const switchers = new Map(
      this.branches
        .points(id)
        .filter((point) => point.messageIndex < messages.length)
        .map((point) => [point.messageIndex, branchSwitcher(point, (head) => void this.switchBranch(head))]),
    );
    if (switchers.size) this.chat.showMessages(messages, { interactive: true, branches: switchers });
  }

  /** Continues the conversation on another branch: a fork of its newest checkpoint becomes the latest. */
  async switchBranch(headId: string): Promise<void> {
    try {
      await this.session.fork(this.currentId, headId);
      await this.refresh();
    } catch (error) {
      this.chat.showError(`Could not switch to that version: ${messageOf(error)}`);
    }
  }

  eventsFor(threadId: string): (event: RunEvent) => void {
    return (event) => {
      if (threadId !== this.currentId || this.viewing) return;
      if (event.kind === "token") this.chat.appendToken(event.text);
      // The step's checkpoint may still be in flight: drafts until the run ends and refresh() reads the saver.
      else this.chat.showMessages(event.messages, { draft: true });
    };
  }

  afterRun(threadId: string, run: Promise<void>): void {
    run
      // The failure shows on the turn itself (refresh reads it), with Retry.
      .catch((error: unknown) => {
        if (!(error instanceof RunNotStarted)) console.warn("run failed:", errorText(error));
      })
      .finally(() => {
        if (threadId === this.currentId) void this.refresh();
      });
  }

  send(text: string): void {
    if (this.viewing) return;
    const id = this.currentId;
    this.chat.showError(undefined);
    this.chat.showApproval(undefined);
    this.chat.showProblem(undefined);
    this.chat.addPendingUser(text);
    this.chat.setRunning(true);
    const run = this.session.send(id, text, this.eventsFor(id)).catch((error: unknown) => {
      // Stopped while it waited for another tab's answer: never sent, so the text goes back to the composer.
      if (error instanceof RunNotStarted && id === this.currentId) this.chat.restoreDraft(text);
      throw error;
    });
    this.afterRun(id, run);
  }

  /** Starts a run on the open thread (retry, regenerate, edit): the chat shows it as running until it ends. */
  runOnCurrent(start: (threadId: string, events: (event: RunEvent) => void) => Promise<void>): void {
    if (this.viewing) return;
    const id = this.currentId;
    this.chat.showError(undefined);
    this.chat.showProblem(undefined);
    this.chat.setRunning(true);
    this.afterRun(id, start(id, this.eventsFor(id)));
  }

  decide(decision: "approve" | "reject"): void {
    const id = this.currentId;
    // The composer was disabled while the card waited: enable it first, so the focus can go back to it.
    this.chat.setDisabled(undefined);
    this.chat.showApproval(undefined);
    this.chat.focus();
    this.chat.setRunning(true);
    this.afterRun(
      id,
      decision === "approve"
        ? this.session.approve(id, this.eventsFor(id))
        : this.session.reject(id, this.eventsFor(id)),
    );
  }

  // ------------------------------------------------------------ time travel

  toggleHistory(open: boolean): void {
    this.showHistoryPanel(open);
    if (open) void this.refreshHistory();
    else if (this.viewing) void this.view(undefined);
  }

  /** Shows or hides the panel only (a phone hides it to show the selected state). */
  showHistoryPanel(open: boolean): void {
    // Focus inside a panel that goes away would fall to the page: it goes back to the History button.
    const hadFocus = !open && this.history.el.contains(document.activeElement);
    this.historyOpen = open;
    this.history.el.hidden = !open;
    if (hadFocus) this.historyButton.focus();
    this.historyButton.setAttribute("aria-expanded", String(open));
    this.historyButton.classList.toggle("active", open);
  }

  /**
   * Reads the history and draws it as it streams in (once per animation
   * frame), so the newest turns show at once on a long thread.
   */
  async refreshHistory(): Promise<void> {
    const seq = ++this.#historySeq;
    const id = this.currentId;
    const rows: Row[] = [];
    let frame = 0;
    let drawnAt = 0;
    const draw = (complete: boolean) => {
      frame = 0;
      if (seq !== this.#historySeq || id !== this.currentId) return;
      drawnAt = performance.now();
      this.rows = rows;
      if (complete) countMessages(rows);
      this.history.render(rows, this.viewing?.id, complete);
      if (complete) {
        this.branches.adopt(id, rows);
        this.drawBranches();
      }
    };
    try {
      for await (const tuple of this.session.timeline(id)) {
        if (seq !== this.#historySeq) return;
        rows.push(rowOf(tuple));
        // The first rows at the next frame, then a redraw at most every DRAW_EVERY ms: each one redraws the panel.
        if (!frame && (drawnAt === 0 || performance.now() - drawnAt > DRAW_EVERY))
          frame = requestAnimationFrame(() => draw(false));
      }
    } finally {
      cancelAnimationFrame(frame);
    }
    draw(true);
  }

  /** Shows the state at a checkpoint (undefined: back to the latest); resolves once it is drawn. */
  view(checkpointId: string | undefined): Promise<void> {
    const latest = this.rows[0]?.id;
    this.viewing = checkpointId && checkpointId !== latest ? { id: checkpointId } : undefined;
    return this.refresh();
  }

  async fork(): Promise<void> {
    if (!this.viewing) return;
    try {
      await this.session.fork(this.currentId, this.viewing.id);
      this.viewing = undefined;
      await this.refresh();
      this.chat.focus();
    } catch (error) {
      this.chat.showError(`Could not fork: ${messageOf(error)}`);
    }
  }

  // ------------------------------------------------------------ layout, lock

  toggleSidebar(open = !document.body.classList.contains("sidebar-open")): void {
    document.body.classList.toggle("sidebar-open", open);
    this.menuButton.setAttribute("aria-expanded", String(open));
  }

  lock(passphrase: string): Promise<void> {
    return this.replaceSession(() => this.session.lock(passphrase));
  }

  /** Moves to the session a lock change returns (lock, new passphrase, unlock for good). */
  async replaceSession(change: () => Promise<Session>): Promise<void> {
    this.locking = true;
    try {
      const next = await change();
      this.knownLock = lockIdentity(next.vault.salt);
      this.attach(next);
      await this.showThreads(await db.threads.orderBy("updatedAt").reverse().toArray());
      await this.refresh();
    } finally {
      this.locking = false;
    }
  }
}

/** Two stored titles are the same value (sealed ones compare by bytes). */
function sameSealed(a: unknown, b: unknown): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  const x = (a as { data: Uint8Array }).data;
  const y = (b as { data: Uint8Array }).data;
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

async function start(session: Session): Promise<void> {
  const last = await db.threads.orderBy("updatedAt").last();
  new App(session, last?.id);
  // Settings a locked vault refused (planted rows): said, not silently replaced.
  if (session.problems.length > 0) root.querySelector(".app")?.prepend(vaultNotice(session.problems));
}

async function eraseEverything(): Promise<void> {
  await Promise.all(
    Object.values(DATABASES).flatMap((names) => [deleteDatabase(names.saver), deleteDatabase(names.store)]),
  );
  await db.delete();
}

async function boot(): Promise<void> {
  // A lock change cut short (the tab closed) is finished before anything else.
  await finishPendingDeletes(db, () =>
    root.replaceChildren(h("p", { class: "boot" }, "Finishing the lock: close the app's other tabs…")),
  );
  const lock = await db.lock();
  if (!lock) return start(await Session.open(db, plainVault));
  root.replaceChildren(
    createLockScreen({
      unlock: async (passphrase) => {
        // A lock of the first format is the user's own: upgraded in place, not refused (vault-upgrade.ts).
        const { vault, problems } = isV1Lock(lock)
          ? await upgradeV1Lock(db, lock, passphrase)
          : { vault: await unlock(lock, passphrase), problems: [] };
        const session = await Session.open(db, vault);
        session.problems.push(...problems);
        await start(session);
      },
      erase: async () => {
        await eraseEverything();
        location.reload();
      },
    }),
  );
}

boot().catch((error: unknown) => {
  root.replaceChildren(
    h("div", { class: "fatal", role: "alert" }, h("h1", {}, "The app could not start"), h("p", {}, messageOf(error))),
  );
});
