/**
 * A session: the saver, the store and the agent opened for one vault (plain
 * or locked), plus the operations the UI calls. No DOM here.
 */
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { StateSnapshot } from "@langchain/langgraph/web";
import { ulid } from "ulid";
import {
  buildAgent,
  listMemories,
  memoryNamespace,
  rejectionMessages,
  APPROVAL_NODE,
  type Agent,
  type AgentConfigurable,
  type TokenChunk,
} from "./agent.js";
import { errorText, isAbort } from "./errors.js";
import { DIMS, HashEmbeddings } from "./embeddings.js";
import {
  IndexedDBSaver,
  IndexedDBStore,
  copyThreads,
  exportThread,
  importThread,
  runOnThread,
  watchThreadRunning,
  SyncClient,
  type SyncStatus,
} from "./lib.js";
import { NO_SYNC, loadSyncSettings, saveSyncSettings, type SyncSettings } from "./sync.js";
import { modelFor } from "./model.js";
import {
  DEFAULT_MODEL_SETTINGS,
  UnsealedTextError,
  createLock,
  refusing,
  databasesOf,
  loadModelSettings,
  plainVault,
  saveModelSettings,
  settingRow,
  titlePlace,
  type ModelSettings,
  type Vault,
} from "./settings.js";
import type { DemoDB, LockRow } from "./threads-db.js";
import { pendingDeletes, prepareLockedOpen, runPendingDeletes, withMigrationLock } from "./vault-migration.js";

export { deleteDatabase } from "./vault-migration.js";

/** What a run tells the page as it goes. */
export type RunEvent = { kind: "token"; text: string } | { kind: "values"; messages: BaseMessage[] };

/**
 * How a thread's last turn ended when it has no answer: stopped here, failed
 * (the model's error), or interrupted (the page was closed mid-answer: the
 * saver holds a step that never finished, and no tab is running it).
 */
/**
 * A run stopped while it still waited for the thread (another tab was
 * answering on it): nothing of it was written, its input never sent.
 */
export class RunNotStarted extends Error {
  override name = "RunNotStarted";
}

export type TurnProblem = { kind: "stopped" } | { kind: "failed"; message: string } | { kind: "interrupted" };

/** A thread's title from its first message. */
export function titleFrom(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 48 ? `${line.slice(0, 47)}…` : line || "New thread";
}

/** Checkpoints in the history's first read (about four turns). */
const FIRST_PAGE = 12;

export class Session {
  readonly saver: IndexedDBSaver;
  readonly store: IndexedDBStore;
  readonly agent: Agent;
  #model: ModelSettings;
  /** One run at a time per thread: sends queue behind the running one. */
  readonly #queues = new Map<string, Promise<void>>();
  readonly #running = new Set<string>();
  /** Threads whose run holds the thread's lock in this tab (the others may wait for another tab's). */
  readonly #holding = new Set<string>();
  /** The running run of each thread, to stop it. */
  readonly #controllers = new Map<string, AbortController>();
  /** Threads whose last run was stopped in this tab (the saver can't tell a stop from a closed tab). */
  readonly #stopped = new Set<string>();
  /** Where the saver syncs to (empty: nowhere), and the client doing it. */
  #syncSettings: SyncSettings = NO_SYNC;
  #sync: SyncClient | undefined;
  #syncStatus: SyncStatus = { state: "stopped", pending: 0, threads: 0, remote: false };
  readonly #syncListeners = new Set<(status: SyncStatus) => void>();
  #lastSyncedAt = 0;
  /** The last error of each thread's run in this tab, for failures that left no task error in the saver. */
  readonly #failed = new Map<string, string>();
  /** What was refused while opening (a planted setting): for the page to report. */
  readonly problems: string[] = [];

  private constructor(
    readonly db: DemoDB,
    readonly vault: Vault,
    readonly userId: string,
    model: ModelSettings,
  ) {
    const names = databasesOf(vault);
    this.saver = new IndexedDBSaver({ dbName: names.saver, serde: vault.serde });
    this.store = new IndexedDBStore({
      dbName: names.store,
      serde: vault.serde,
      index: { dims: DIMS, embeddings: new HashEmbeddings(), fields: ["text"] },
    });
    this.#model = model;
    this.agent = buildAgent({ checkpointer: this.saver, store: this.store, model: () => modelFor(this.#model) });
  }

  /** Opens the vault's databases (a wrong key fails here) and the settings. */
  static async open(db: DemoDB, vault: Vault): Promise<Session> {
    if (vault.locked) await prepareLockedOpen(db);
    const userId = await db.userId(ulid);
    const problems: string[] = [];
    const model = await refusing(loadModelSettings(db, vault), "model settings", DEFAULT_MODEL_SETTINGS, problems);
    const session = new Session(db, vault, userId, model);
    // The first read binds the serializer to the databases' key records.
    await session.saver.listThreads({ limit: 1 }).next();
    await session.store.search(memoryNamespace(userId), { limit: 1 });
    await session.#adoptUnlistedThreads();
    session.#syncSettings = await refusing(loadSyncSettings(db, vault), "sync settings", NO_SYNC, problems);
    session.problems.push(...problems);
    session.#startSync();
    return session;
  }

  get model(): ModelSettings {
    return this.#model;
  }

  async setModel(settings: ModelSettings): Promise<void> {
    await saveModelSettings(this.db, this.vault, settings);
    this.#model = settings;
  }

  config(threadId: string, checkpointId?: string) {
    const configurable: AgentConfigurable & { checkpoint_id?: string } = { thread_id: threadId, user_id: this.userId };
    if (checkpointId) configurable.checkpoint_id = checkpointId;
    return { configurable };
  }

  isRunning(threadId: string): boolean {
    return this.#running.has(threadId);
  }

  /**
   * Tells `listener` whether another tab (or worker) is running the thread:
   * its Web Lock is held, and not by this tab. A message sent meanwhile waits
   * for it (see `#run`).
   */
  watchElsewhere(threadId: string, listener: (busy: boolean) => void): () => void {
    return watchThreadRunning(threadId, { dbName: this.saver.dbName, pollMs: 500 }, (running) =>
      listener(running && !this.#holding.has(threadId)),
    );
  }

  /** The thread's state: the latest, or at one checkpoint. */
  state(threadId: string, checkpointId?: string): Promise<StateSnapshot> {
    return this.agent.getState(this.config(threadId, checkpointId));
  }

  /**
   * Every checkpoint of the thread's root namespace, every branch, newest
   * first, as the saver pages them in (raw tuples: no state is rebuilt).
   */
  async *timeline(threadId: string): AsyncGenerator<CheckpointTuple> {
    const config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    // A small first read, so the newest rows show at once; then the rest, older than it.
    let last: CheckpointTuple | undefined;
    for await (const tuple of this.saver.list(config, { limit: FIRST_PAGE })) yield (last = tuple);
    if (!last) return;
    yield* this.saver.list(config, { before: last.config });
  }

  /** Sends a user message (queued behind a run in progress on the thread). */
  send(threadId: string, text: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return this.#enqueue(threadId, async () => {
      await this.db.touch(threadId, () => this.vault.seal(titleFrom(text), titlePlace(threadId)));
      await this.#run(threadId, { messages: [new HumanMessage(text)] }, onEvent);
    });
  }

  /** Stops the thread's running answer; the turn stays, marked stopped, with Retry. */
  stop(threadId: string): void {
    this.#controllers.get(threadId)?.abort(new DOMException("Stopped by the user.", "AbortError"));
  }

  /**
   * Why the latest turn has no answer, or undefined when it has one (or is
   * paused for approval, or running). Read from the saver, so it survives a
   * reload: a step still due (`next`) that nothing runs was cut short, and a
   * task error saved with it says why.
   */
  problem(threadId: string, snapshot: StateSnapshot): TurnProblem | undefined {
    if (this.isRunning(threadId) || snapshot.next.length === 0 || snapshot.next.includes(APPROVAL_NODE))
      return undefined;
    const failed = snapshot.tasks.find((task) => task.error !== undefined);
    if (failed)
      return isAbort(failed.error) ? { kind: "stopped" } : { kind: "failed", message: errorText(failed.error) };
    const message = this.#failed.get(threadId);
    if (message) return { kind: "failed", message };
    return this.#stopped.has(threadId) ? { kind: "stopped" } : { kind: "interrupted" };
  }

  /** Runs the unfinished step again (after a stop, a failure or a reload). */
  retry(threadId: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return this.#enqueue(threadId, async () => {
      const state = await this.state(threadId);
      if (state.next.length === 0 || state.next.includes(APPROVAL_NODE)) return;
      await this.#run(threadId, null, onEvent);
    });
  }

  /**
   * A new answer to the last question: the question is sent again from the
   * checkpoint before it (as Edit does, with the same text). Running the
   * agent again from its own old checkpoint would not do: LangGraph reuses a
   * task's saved writes, so the "new" answer would be the old one. The old
   * answer stays on its own branch.
   */
  async regenerate(threadId: string, onEvent: (event: RunEvent) => void): Promise<void> {
    const messages = ((await this.state(threadId)).values.messages ?? []) as BaseMessage[];
    let question = messages.length - 1;
    while (question >= 0 && messages[question]!.getType() !== "human") question -= 1;
    if (question < 0) return;
    await this.edit(threadId, question, String(messages[question]!.content), onEvent);
  }

  /**
   * Edits the user message at `index`: a fork of the checkpoint before it
   * (the state with the `index` messages before it), so the conversation
   * continues from the edited message and the original stays on its branch.
   */
  edit(threadId: string, index: number, text: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return this.#enqueue(threadId, async () => {
      let snapshot: StateSnapshot | undefined = await this.state(threadId);
      let before: StateSnapshot | undefined;
      while (snapshot) {
        const count = ((snapshot.values.messages ?? []) as BaseMessage[]).length;
        // The newest state with exactly `index` messages that was waiting for input.
        if (count === index && !snapshot.next.includes("agent")) {
          before = snapshot;
          if (snapshot.next.length === 0) break;
        }
        if (count < index) break;
        const parent = snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined;
        snapshot = parent ? await this.state(threadId, parent) : undefined;
      }
      if (!before) throw new Error("Could not find the checkpoint before this message.");
      await this.#run(
        threadId,
        { messages: [new HumanMessage(text)] },
        onEvent,
        before.config.configurable?.checkpoint_id as string,
      );
    });
  }

  /** Approves the paused save_memory call: the `tools` node runs. */
  approve(threadId: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return this.#enqueue(threadId, async () => {
      if (!(await this.state(threadId)).next.includes(APPROVAL_NODE)) return;
      await this.#run(threadId, null, onEvent);
    });
  }

  /** Rejects it: a ToolMessage as if `tools` had run, then the agent answers. */
  reject(threadId: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return this.#enqueue(threadId, async () => {
      const state = await this.state(threadId);
      if (!state.next.includes(APPROVAL_NODE)) return;
      const messages = state.values.messages as BaseMessage[];
      await this.agent.updateState(this.config(threadId), { messages: rejectionMessages(messages) }, APPROVAL_NODE);
      await this.#run(threadId, null, onEvent);
    });
  }

  /**
   * Forks: a new checkpoint whose parent is `checkpointId`, with that
   * checkpoint's state. It becomes the thread's latest, so the conversation
   * continues there; the old branch stays in the history.
   */
  fork(threadId: string, checkpointId: string): Promise<void> {
    return this.#enqueue(threadId, async () => {
      await this.agent.updateState(this.config(threadId, checkpointId), { messages: [] });
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.saver.deleteThread(threadId);
    await this.db.threads.delete(threadId);
  }

  async exportThread(threadId: string): Promise<Blob> {
    return exportThread(this.saver, threadId);
  }

  /** Imports a thread file under a new id; returns the id. */
  async importThread(file: Blob, fileName: string): Promise<string> {
    const threadId = ulid();
    await importThread(this.saver, file, { targetThreadId: threadId });
    const messages = ((await this.state(threadId)).values.messages ?? []) as BaseMessage[];
    const first = messages.find((m) => m.getType() === "human");
    const title = first ? titleFrom(String(first.content)) : fileName.replace(/\.[^.]+$/, "");
    await this.db.touch(threadId, () => this.vault.seal(`${title} (imported)`, titlePlace(threadId)));
    return threadId;
  }

  /** The user's memories, oldest first. */
  memories(): Promise<{ key: string; text: string }[]> {
    return listMemories(this.store, this.userId);
  }

  async forget(key: string): Promise<void> {
    await this.store.delete(memoryNamespace(this.userId), key);
  }

  /**
   * Locks the app with a passphrase: see {@link Session.#migrateTo}.
   * Returns the session on the encrypted databases.
   */
  async lock(passphrase: string): Promise<Session> {
    if (this.vault.locked) throw new Error("Already locked.");
    await Promise.all([...this.#queues.values()]);
    const { vault, row } = await createLock(passphrase);
    return this.#migrateTo(vault, row);
  }

  /**
   * Moves everything to `vault`'s databases (locking, or removing the lock):
   * every thread and memory is copied; then, in one transaction, the thread
   * titles and settings are sealed for `vault`, the lock record is written
   * (or removed) and the old databases are marked for deletion; then they
   * are deleted (vault-migration.ts: a tab closed before that finishes them
   * on its next start).
   */
  async #migrateTo(vault: Vault, row: LockRow | undefined): Promise<Session> {
    const from = Object.values(databasesOf(this.vault));
    return withMigrationLock(async () => {
      // Leftovers of an earlier migration cut short.
      await runPendingDeletes(this.db, Object.values(databasesOf(vault)));
      const next = new Session(this.db, vault, this.userId, this.#model);
      await copyThreads(this.saver, next.saver, { ifExists: "replace" });
      const namespace = memoryNamespace(this.userId);
      for (const item of await this.store.search(namespace, { limit: 100_000 }))
        await next.store.put(namespace, item.key, item.value);
      // Both databases exist, with their key records, before the lock record names them.
      await next.saver.listThreads({ limit: 1 }).next();
      await next.store.search(namespace, { limit: 1 });
      await this.#storeTexts(vault, await this.#openTexts(), row, from);
      await this.close();
      await runPendingDeletes(this.db);
      next.#syncSettings = this.#syncSettings;
      next.#startSync();
      return next;
    });
  }

  /**
   * A new passphrase: the saver and store rotate their data key
   * (`changeKey`: every row re-encrypted under a fresh one), the demo's own sealed texts are
   * sealed again, and the lock record gets the new salt and check value.
   */
  async changePassphrase(passphrase: string): Promise<Session> {
    if (!this.vault.locked) throw new Error("Not locked.");
    await Promise.all([...this.#queues.values()]);
    const { vault, row } = await createLock(passphrase);
    // Read the texts with the old key first: after changeKey only the new one opens the databases.
    const texts = await this.#openTexts();
    await this.saver.changeKey(vault.serde!);
    await this.store.changeKey(vault.serde!);
    await this.#storeTexts(vault, texts, row);
    await this.close();
    const next = new Session(this.db, vault, this.userId, this.#model);
    await next.saver.listThreads({ limit: 1 }).next();
    next.#syncSettings = this.#syncSettings;
    next.#startSync();
    return next;
  }

  /** Removes the lock: the reverse of {@link lock}, back to the plain databases. */
  async unlockForGood(): Promise<Session> {
    if (!this.vault.locked) throw new Error("Not locked.");
    await Promise.all([...this.#queues.values()]);
    return this.#migrateTo(plainVault, undefined);
  }

  /** The demo's own texts (thread titles), opened with this session's vault; a refused one is not carried over. */
  async #openTexts(): Promise<{ id: string; title: string }[]> {
    const threads = await this.db.threads.toArray();
    return Promise.all(
      threads.map(async (t) => ({
        id: t.id,
        title: await this.vault.open(t.title, titlePlace(t.id)).catch((error: unknown) => {
          if (error instanceof UnsealedTextError) return "(unreadable title)";
          throw error;
        }),
      })),
    );
  }

  /**
   * Seals the titles and settings with `vault`, and writes (or, with none,
   * deletes) the lock record, with the marker of the databases to delete
   * after it: all in one transaction.
   */
  async #storeTexts(
    vault: Vault,
    texts: { id: string; title: string }[],
    row: LockRow | undefined,
    toDelete: readonly string[] = [],
  ): Promise<void> {
    const sealed = await Promise.all(
      texts.map(async (t) => ({ id: t.id, title: await vault.seal(t.title, titlePlace(t.id)) })),
    );
    const model = await settingRow(vault, "model", this.#model);
    const sync = await settingRow(vault, "sync", this.#syncSettings);
    await this.db.transaction("rw", this.db.threads, this.db.settings, async () => {
      for (const t of sealed) await this.db.threads.update(t.id, { title: t.title });
      await this.db.settings.put(model);
      await this.db.settings.put(sync);
      if (row) await this.db.settings.put(row);
      else await this.db.settings.delete("lock");
      if (toDelete.length > 0) await this.db.settings.put(pendingDeletes(toDelete));
    });
  }

  async close(): Promise<void> {
    this.#sync?.close();
    this.#sync = undefined;
    await Promise.all([this.saver.close(), this.store.close()]);
  }

  get syncSettings(): SyncSettings {
    return this.#syncSettings;
  }

  /** Saves where to sync (sealed like the other settings) and restarts sync there. */
  async setSync(settings: SyncSettings): Promise<void> {
    await saveSyncSettings(this.db, this.vault, settings);
    this.#syncSettings = settings;
    this.#startSync();
  }

  /** One sync round now (the Settings button); resolves when both sides agree. */
  async syncNow(): Promise<void> {
    if (!this.#sync) throw new Error("Sync is off: set a server URL and a token first.");
    await this.#sync.syncNow();
    await this.#adoptUnlistedThreads();
  }

  /** Tells `listener` the sync status now and on every change; returns the function that stops it. */
  onSyncStatus(listener: (status: SyncStatus) => void): () => void {
    this.#syncListeners.add(listener);
    listener(this.#syncStatus);
    return () => void this.#syncListeners.delete(listener);
  }

  #startSync(): void {
    this.#sync?.close();
    this.#sync = undefined;
    const { url, token } = this.#syncSettings;
    if (!url || !token) {
      this.#setSyncStatus({ state: "stopped", pending: 0, threads: 0, remote: false });
      return;
    }
    const client = new SyncClient({ saver: this.saver, url, token, intervalMs: 2_000 });
    this.#sync = client;
    client.subscribe((status) => {
      if (this.#sync !== client) return;
      this.#setSyncStatus(status);
      // Threads another device started arrive in the saver: give them a sidebar row.
      if (status.lastSyncedAt && status.lastSyncedAt !== this.#lastSyncedAt) {
        this.#lastSyncedAt = status.lastSyncedAt;
        void this.#adoptUnlistedThreads().catch((error: unknown) => console.warn("adopt threads", error));
      }
    });
    client.start();
  }

  #setSyncStatus(status: SyncStatus): void {
    this.#syncStatus = status;
    for (const listener of this.#syncListeners) listener(status);
  }

  /** Threads in the saver without a sidebar row (imported elsewhere, or a row lost): list them. */
  async #adoptUnlistedThreads(): Promise<void> {
    const known = new Set(await this.db.threads.toCollection().primaryKeys());
    for await (const thread of this.saver.listThreads()) {
      if (known.has(thread.threadId)) continue;
      const messages = ((await this.state(thread.threadId)).values.messages ?? []) as BaseMessage[];
      const first = messages.find((m) => m.getType() === "human");
      await this.db.touch(
        thread.threadId,
        () => this.vault.seal(first ? titleFrom(String(first.content)) : "Untitled", titlePlace(thread.threadId)),
        thread.updatedAt,
      );
    }
  }

  #enqueue(threadId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.#queues.get(threadId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.catch(() => undefined);
    this.#queues.set(threadId, tail);
    void tail.then(() => {
      if (this.#queues.get(threadId) === tail) this.#queues.delete(threadId);
    });
    return next;
  }

  /**
   * Streams one run (from `checkpointId` when given: a fork). A stop ends it
   * quietly (the turn shows it was stopped); any other error is thrown.
   */
  async #run(
    threadId: string,
    input: { messages: BaseMessage[] } | null,
    onEvent: (event: RunEvent) => void,
    checkpointId?: string,
  ): Promise<void> {
    const controller = new AbortController();
    this.#running.add(threadId);
    this.#controllers.set(threadId, controller);
    this.#stopped.delete(threadId);
    this.#failed.delete(threadId);
    // The run holds the thread's Web Lock: a send from another tab on the same
    // thread waits for it ("enqueue") and then runs on its answer, so two tabs
    // never answer from the same parent (no lost message, no hidden branch).
    const streamer = {
      checkpointer: this.saver,
      invoke: async (runInput: typeof input, options?: RunnableConfig): Promise<void> => {
        this.#holding.add(threadId);
        const stream = await this.agent.stream(runInput, {
          ...options,
          streamMode: ["custom", "values"],
        });
        for await (const [mode, chunk] of stream) {
          if (mode === "custom") onEvent({ kind: "token", text: (chunk as TokenChunk).text });
          else onEvent({ kind: "values", messages: (chunk as { messages?: BaseMessage[] }).messages ?? [] });
        }
      },
    };
    try {
      await runOnThread(streamer, input, this.config(threadId, checkpointId), {
        multitask: "enqueue",
        saver: this.saver,
        signal: controller.signal,
      });
    } catch (error) {
      if (!controller.signal.aborted) {
        this.#failed.set(threadId, errorText(error));
        throw error;
      }
      // Not holding the thread yet: the run never started, so no turn of this tab was stopped.
      if (!this.#holding.has(threadId)) throw new RunNotStarted("Stopped before it started.");
      this.#stopped.add(threadId);
    } finally {
      this.#running.delete(threadId);
      this.#holding.delete(threadId);
      this.#controllers.delete(threadId);
    }
  }
}
