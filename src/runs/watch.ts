/**
 * Whether a thread runs, for a UI: `isThreadRunning` asks the lock manager
 * whether the thread's run lock is held (by any tab or worker of the origin);
 * `watchThreadRunning` follows it on the run channel's notices. Re-exported
 * by coordinator.ts, the module the entries name.
 */
import { defaultLockManager, runLockName, type RunLockManager } from "./locks.js";
import { RunChannel } from "./signals.js";

/** The database name `IndexedDBSaver` uses when none is given. */
const DEFAULT_DB_NAME = "langgraph";

/** Options of {@link isThreadRunning} and {@link watchThreadRunning}. */
export interface ThreadRunningOptions {
  /** The database of the thread (the saver's `dbName`); default `"langgraph"`. */
  dbName?: string;
  /** Lock manager; default `navigator.locks`, or the in-process fallback. */
  locks?: RunLockManager;
}

/** Options of {@link watchThreadRunning}. */
export interface WatchThreadRunningOptions extends ThreadRunningOptions {
  /**
   * While the thread is running, re-check this often (ms, default 1000): a
   * tab that is closed or crashes sends no "ended" notice, but the browser
   * releases its lock.
   */
  pollMs?: number;
}

/**
 * True while any tab or worker of this origin (or, on the fallback, this
 * realm) runs `threadId` of database `dbName` through `runOnThread`:
 * whether the thread's lock is held, from the lock manager's `query()`.
 */
export async function isThreadRunning(threadId: string, options: ThreadRunningOptions = {}): Promise<boolean> {
  const locks = options.locks ?? defaultLockManager();
  const { held } = await locks.query();
  return held.includes(runLockName(options.dbName ?? DEFAULT_DB_NAME, threadId));
}

/**
 * Calls `listener` with whether `threadId` is running (as
 * {@link isThreadRunning}) now and each time that changes: on the
 * "started"/"ended" notices runs send on the database's run channel, and,
 * while it runs, every `pollMs` (a closed tab sends no notice).
 *
 * @returns A function that stops watching.
 */
export function watchThreadRunning(
  threadId: string,
  options: WatchThreadRunningOptions,
  listener: (running: boolean) => void,
): () => void {
  const dbName = options.dbName ?? DEFAULT_DB_NAME;
  const pollMs = options.pollMs ?? 1000;
  // 0, a negative number or NaN would re-query the lock manager back to back for as long as the thread runs.
  if (!(Number.isFinite(pollMs) && pollMs > 0)) {
    throw new Error(`watchThreadRunning: pollMs must be a positive number of milliseconds; got ${String(pollMs)}.`);
  }
  const channel = new RunChannel(dbName);
  let last: boolean | undefined;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let checking: Promise<void> = Promise.resolve();
  const check = () => {
    // One query at a time, in order, so answers cannot arrive swapped.
    checking = checking
      .then(async () => {
        if (stopped) return;
        const running = await isThreadRunning(threadId, { dbName, locks: options.locks });
        if (stopped) return;
        clearTimeout(timer);
        if (running) timer = setTimeout(check, pollMs);
        if (running !== last) {
          last = running;
          listener(running);
        }
      })
      .catch(() => undefined);
  };
  channel.listen((message) => {
    if ((message.type === "started" || message.type === "ended") && message.threadId === threadId) check();
  });
  check();
  return () => {
    stopped = true;
    clearTimeout(timer);
    channel.close();
  };
}
