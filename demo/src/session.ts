/**
 * A session: the saver, the store and the agent opened for one vault (plain
 * or locked), plus the operations the UI calls. No DOM here. A thin facade:
 * runs are in runs.ts, the runs from a point in a thread's past (regenerate,
 * edit, an approval's answer, fork) in session-turns.ts, thread reads and
 * imports in session-threads.ts, the lock change's data moves in
 * session-lock.ts, sync in session-sync.ts.
 */
import { HumanMessage } from "@langchain/core/messages";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { StateSnapshot } from "@langchain/langgraph/web";
import { ulid } from "ulid";
import {
  buildAgent,
  listMemories,
  memoryNamespace,
  type ApprovalAnswer,
  APPROVAL_NODE,
  stamped,
  type Agent,
  type AgentConfigurable,
} from "./agent.js";
import { exportThread, watchThreadRunning, type IndexedDBSaver, type IndexedDBStore, type SyncStatus } from "./lib.js";
import { saveSyncSettings, type SyncSettings } from "./sync.js";
import { modelFor } from "./model.js";
import {
  createLock,
  databasesOf,
  plainVault,
  saveModelSettings,
  instructionsPlace,
  titlePlace,
  type ModelSettings,
  type Vault,
} from "./settings.js";
import type { DemoDB } from "./threads-db.js";
import { prepareLockedOpen } from "./vault-migration.js";
import {
  allQueued,
  enqueue,
  enqueueRun,
  newRunState,
  runThread,
  type RunInput,
  stopRun,
  turnProblem,
  type RunEvent,
  type TurnProblem,
} from "./runs.js";
import { adoptUnlistedThreads, importThreadFile, type ImportOutcome, timeline, titleFrom } from "./session-threads.js";
import { answerQuestion, editMessage, forkAt, regenerateAnswer, type RunFrom } from "./session-turns.js";
import { loadSettings, moveVault, rekeyVault, vaultData, type MovingSession } from "./session-lock.js";
import { changeOf, newLockKey, provenKey, withKeyChangeLock } from "./vault-key-change.js";
import { SyncLink } from "./session-sync.js";
import { messageOf } from "./errors.js";
import { connectRefusal } from "../csp.js";

export { deleteDatabase } from "./vault-migration.js";

export { QuestionAnsweredError } from "./session-turns.js";
export { KeyChangeCutError, OldDataLeftError } from "./session-lock.js";

export class Session {
  readonly saver: IndexedDBSaver;
  readonly store: IndexedDBStore;
  readonly agent: Agent;
  #model: ModelSettings;
  readonly #runs = newRunState();
  readonly #sync: SyncLink;
  /** A lock change of this session committed: its data is in the new databases, even if the call then failed. */
  #moved = false;
  /** What was refused while opening (a planted setting): for the page to report. */
  readonly problems: string[] = [];

  private constructor(
    readonly db: DemoDB,
    readonly vault: Vault,
    readonly userId: string,
    model: ModelSettings,
  ) {
    ({ saver: this.saver, store: this.store } = vaultData(databasesOf(vault), vault.serde));
    this.#model = model;
    this.agent = buildAgent({
      checkpointer: this.saver,
      store: this.store,
      model: () => modelFor(this.#model),
      instructions: (threadId) => this.instructions(threadId),
    });
    // Threads another device started arrive in the saver: give them a sidebar row.
    this.#sync = new SyncLink(this.saver, () => {
      void this.#adoptUnlistedThreads().catch((error: unknown) => console.warn("adopt threads", error));
    });
  }

  /** Opens the vault's databases (a wrong key fails here) and the settings. */
  static async open(db: DemoDB, vault: Vault): Promise<Session> {
    if (vault.locked) await prepareLockedOpen(db);
    const userId = await db.userId(ulid);
    const problems: string[] = [];
    const { model, sync } = await loadSettings(db, vault, problems);
    const session = new Session(db, vault, userId, model);
    // The first read binds the serializer to the databases' key records.
    await session.saver.listThreads({ limit: 1, count: false }).next();
    await session.store.search(memoryNamespace(userId), { limit: 1 });
    await session.#adoptUnlistedThreads();
    try {
      session.#sync.start(sync);
    } catch (error) {
      // Kept by an earlier version, which saved what the client then refused: the app starts, sync off.
      problems.push(`The sync settings could not be used, so sync is off: ${messageOf(error)} Fix them in Settings.`);
    }
    session.problems.push(...problems);
    return session;
  }

  get model(): ModelSettings {
    return this.#model;
  }

  /** Saves the model settings; an endpoint the page's policy forbids is refused, not saved (csp.ts). */
  async setModel(settings: ModelSettings): Promise<void> {
    const refused = settings.provider === "openai" ? connectRefusal(settings.baseUrl, location.origin) : undefined;
    if (refused) throw new Error(refused);
    await saveModelSettings(this.db, this.vault, settings);
    this.#model = settings;
  }

  /** The thread's custom instructions ("" for none); a locked vault refuses ones it did not seal. */
  async instructions(threadId: string): Promise<string> {
    const row = await this.db.threads.get(threadId);
    return row?.instructions ? this.vault.open(row.instructions, instructionsPlace(threadId)) : "";
  }

  /** Keeps (sealed) the thread's custom instructions; blank removes them. Only a thread with a row has any. */
  async setInstructions(threadId: string, text: string): Promise<void> {
    const value = text.trim();
    const instructions = value ? await this.vault.seal(value, instructionsPlace(threadId)) : undefined;
    if (!(await this.db.threads.update(threadId, { instructions })))
      throw new Error("This thread is not saved yet: send a message first.");
  }

  config(threadId: string, checkpointId?: string) {
    const configurable: AgentConfigurable & { checkpoint_id?: string } = { thread_id: threadId, user_id: this.userId };
    if (checkpointId) configurable.checkpoint_id = checkpointId;
    return { configurable };
  }

  /** Whether a run of this tab is going on the thread, or asked for and not ended (see runs.ts `enqueueRun`). */
  isRunning(threadId: string): boolean {
    return this.#runs.running.has(threadId) || this.#runs.asked.has(threadId);
  }

  /**
   * Tells `listener` whether another tab (or worker) is running the thread:
   * its Web Lock is held, and not by this tab. A message sent meanwhile waits
   * for it (see runs.ts).
   */
  watchElsewhere(threadId: string, listener: (busy: boolean) => void): () => void {
    return watchThreadRunning(threadId, { dbName: this.saver.dbName, pollMs: 500 }, (running) =>
      listener(running && !this.#runs.holding.has(threadId)),
    );
  }

  /** The thread's state: the latest, or at one checkpoint. */
  state(threadId: string, checkpointId?: string): Promise<StateSnapshot> {
    return this.agent.getState(this.config(threadId, checkpointId));
  }

  /** Every checkpoint of the thread, every branch, newest first, paged in (see session-threads.ts). */
  timeline(threadId: string): AsyncGenerator<CheckpointTuple> {
    return timeline(this.saver, threadId);
  }

  /** Sends a user message (queued behind a run in progress on the thread). */
  send(threadId: string, text: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return enqueueRun(this.#runs, threadId, async () => {
      await this.db.touch(threadId, () => this.vault.seal(titleFrom(text), titlePlace(threadId)));
      await this.#run(threadId, { messages: [stamped(new HumanMessage(text))] }, onEvent);
    });
  }

  /** Stops the thread's running answer; the turn stays, marked stopped, with Retry. */
  stop(threadId: string): void {
    stopRun(this.#runs, threadId);
  }

  /** Why the latest turn has no answer, or undefined when it has one (see runs.ts). */
  problem(threadId: string, snapshot: StateSnapshot): TurnProblem | undefined {
    return turnProblem(this.#runs, threadId, snapshot);
  }

  /** Runs the unfinished step again (after a stop, a failure or a reload). */
  retry(threadId: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return enqueueRun(this.#runs, threadId, async () => {
      const state = await this.state(threadId);
      if (state.next.length === 0 || state.next.includes(APPROVAL_NODE)) return;
      await this.#run(threadId, null, onEvent);
    });
  }

  /** A new answer in place of the last one (see session-turns.ts). */
  regenerate(threadId: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return enqueueRun(this.#runs, threadId, () => regenerateAnswer(this, threadId, this.#runFrom(threadId, onEvent)));
  }

  /** Edits the user message at `index`: a fork of the checkpoint before it (see session-turns.ts). */
  edit(threadId: string, index: number, text: string, onEvent: (event: RunEvent) => void): Promise<void> {
    return enqueueRun(this.#runs, threadId, () =>
      editMessage(this, threadId, index, text, this.#runFrom(threadId, onEvent)),
    );
  }

  /** Answers the paused save_memory question `questionId` (see session-turns.ts). */
  answer(
    threadId: string,
    answer: ApprovalAnswer,
    onEvent: (event: RunEvent) => void,
    questionId: string | undefined,
  ): Promise<void> {
    return enqueueRun(this.#runs, threadId, () =>
      answerQuestion(this, threadId, answer, questionId, this.#runFrom(threadId, onEvent), () =>
        this.#runs.failed.delete(threadId),
      ),
    );
  }

  /** Forks: the state of `checkpointId` becomes the thread's latest (see session-turns.ts). */
  fork(threadId: string, checkpointId: string): Promise<void> {
    return enqueue(this.#runs, threadId, () =>
      forkAt(
        this,
        threadId,
        checkpointId,
        this.#runFrom(threadId, () => undefined),
      ),
    );
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.saver.deleteThread(threadId);
    await this.db.threads.delete(threadId);
  }

  async exportThread(threadId: string): Promise<Blob> {
    return exportThread(this.saver, threadId);
  }

  /**
   * Imports a thread file under a new id; a file whose conversation is here
   * already is not imported again unless `copy` (see session-threads.ts).
   */
  importThread(file: Blob, fileName: string, copy = false): Promise<ImportOutcome> {
    return importThreadFile(this.db, this.vault, this.saver, (id) => this.state(id), file, fileName, copy);
  }

  /** The user's memories, oldest first. */
  memories(): Promise<{ key: string; text: string }[]> {
    return listMemories(this.store, this.userId);
  }

  async forget(key: string): Promise<void> {
    await this.store.delete(memoryNamespace(this.userId), key);
  }

  /** Locks the app with a passphrase (see session-lock.ts `moveVault`); returns the session on the encrypted databases. */
  async lock(passphrase: string): Promise<Session> {
    this.#checkNotMoved();
    if (this.vault.locked) throw new Error("Already locked.");
    await allQueued(this.#runs);
    const { vault, row } = await createLock(passphrase);
    return moveVault(this.#moving(), vault, row, () => this.#checkNotMoved());
  }

  /** A new passphrase, once `current` is proved right (see session-lock.ts `rekeyVault`). */
  async changePassphrase(current: string, passphrase: string): Promise<Session> {
    this.#checkNotMoved();
    if (!this.vault.locked) throw new Error("Not locked.");
    // An unlocked, unattended screen is not enough to lock the owner out: the current passphrase is proved
    // on the stored check value first (a wrong one throws WrongPassphraseError, and nothing changes).
    return withKeyChangeLock(async () => {
      const lock = await this.db.lock();
      if (!lock) throw new Error("The lock record is missing: reload the page.");
      const proved = await provenKey(lock, current);
      // Its record holds the keys of a change cut short: a second change must not write over it.
      if (await changeOf(this.db, lock))
        throw new Error("An earlier change did not finish: reload the page and unlock, which finishes or undoes it.");
      const next = await newLockKey(passphrase);
      await allQueued(this.#runs);
      return rekeyVault(this.#moving(), proved, next);
    });
  }

  /** Removes the lock: the reverse of {@link lock}, back to the plain databases. */
  async unlockForGood(): Promise<Session> {
    this.#checkNotMoved();
    if (!this.vault.locked) throw new Error("Not locked.");
    await allQueued(this.#runs);
    return moveVault(this.#moving(), plainVault, undefined, () => this.#checkNotMoved());
  }

  /**
   * Refuses a lock change of a session whose data moved (a call that waited behind the one that moved it):
   * it would take the new databases for leftovers. The app goes on with the next session (OldDataLeftError).
   */
  #checkNotMoved(): void {
    if (this.#moved) throw new Error("The lock changed already; reload the page to go on with the app's data.");
  }

  /** This session as a lock change moves from it (session-lock.ts). */
  #moving(): MovingSession<Session> {
    return {
      db: this.db,
      vault: this.vault,
      userId: this.userId,
      saver: this.saver,
      store: this.store,
      settings: () => ({ model: this.#model, sync: this.#sync.settings }),
      open: (vault) => new Session(this.db, vault, this.userId, this.#model),
      handOver: async (next) => {
        this.#moved = true;
        await this.close();
        await next.saver.listThreads({ limit: 1, count: false }).next();
        next.#sync.start(this.#sync.settings);
      },
    };
  }

  async close(): Promise<void> {
    this.#sync.close();
    await Promise.all([this.saver.close(), this.store.close()]);
  }

  get syncSettings(): SyncSettings {
    return this.#sync.settings;
  }

  /**
   * Restarts sync at `settings` and saves them (sealed like the other
   * settings). Settings the sync client refuses throw first and are not
   * saved: kept, they stopped the app at its next start.
   */
  async setSync(settings: SyncSettings): Promise<void> {
    const before = this.#sync.settings;
    this.#sync.start(settings);
    try {
      await saveSyncSettings(this.db, this.vault, settings);
    } catch (error) {
      this.#sync.start(before);
      throw error;
    }
  }

  /** One sync round now (the Settings button); resolves when both sides agree. */
  async syncNow(): Promise<void> {
    await this.#sync.syncNow();
    await this.#adoptUnlistedThreads();
  }

  /** Tells `listener` the sync status now and on every change; returns the function that stops it. */
  onSyncStatus(listener: (status: SyncStatus) => void): () => void {
    return this.#sync.onStatus(listener);
  }

  /** Threads in the saver without a sidebar row: listed (see session-threads.ts). */
  #adoptUnlistedThreads(): Promise<void> {
    return adoptUnlistedThreads(this.db, this.vault, this.saver, (id) => this.state(id));
  }

  #run(threadId: string, input: RunInput, onEvent: (event: RunEvent) => void, checkpointId?: string): Promise<void> {
    return runThread(this.#runs, this, threadId, input, onEvent, checkpointId);
  }

  /** Runs of the thread, with `onEvent`, for session-turns.ts. */
  #runFrom(threadId: string, onEvent: (event: RunEvent) => void): RunFrom {
    return (input, checkpointId) => this.#run(threadId, input, onEvent, checkpointId);
  }
}
