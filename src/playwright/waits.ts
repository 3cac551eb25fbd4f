/**
 * Waiting on what a thread's database says, never on time: a run's lock
 * released and its last checkpoint committed, or a checkpoint that passes a
 * test. Each poll reads the page's real IndexedDB and Web Locks; a timeout
 * fails with what was last seen.
 */
import type { Page } from "playwright";
import { callPage, ensurePageApi } from "./inject.js";
import type { PageThreadActivity, PageThreadState } from "./protocol.js";
import {
  DEFAULT_PAGE_DB_NAME,
  pageDb,
  readThreadState,
  type PageDatabaseOptions,
  type ReadThreadStateOptions,
} from "./threads.js";

/** Options of the waits. */
export interface WaitOptions extends PageDatabaseOptions {
  /** Give up after this many ms (default 10,000). */
  timeout?: number;
  /** Read again this often (ms, default 100). */
  pollInterval?: number;
}

/** Options of {@link waitForThreadIdle}. */
export interface WaitForThreadIdleOptions extends WaitOptions {
  /** The namespace whose latest checkpoint counts; default the root graph (`""`). */
  checkpointNs?: string;
  /**
   * Idle only once the latest checkpoint is another than this one: pass the
   * id read before starting a run, so that the wait cannot end before the
   * run has begun.
   */
  since?: string;
  /**
   * How long the thread must stay unlocked on the same latest checkpoint
   * (ms, default 250): a run that is about to take the lock (the click that
   * starts it has been dispatched, the lock request not yet granted) is
   * seen before this ends.
   */
  stableFor?: number;
}

/** Where a wait stands: what it saw last. */
export interface Seen<T> {
  value?: T;
  error?: unknown;
}

/**
 * Polls `read` until `done` says so, or fails after `timeout` saying what
 * was seen last. With `page`, the clock starts once the page script is in
 * place (its first injection must not eat the timeout). `read` gets the ms
 * left: a read that waits (an open another connection blocks) must give up
 * by then, or the wait would outlast its timeout.
 */
export async function poll<T>(
  page: Page | undefined,
  options: WaitOptions,
  read: (remaining: number) => Promise<T>,
  done: (value: T) => boolean,
  failure: (seen: Seen<T>, timeout: number) => string,
): Promise<T> {
  if (page) await ensurePageApi(page).catch(() => undefined); // a failure shows in the first read
  const timeout = options.timeout ?? 10_000;
  const interval = options.pollInterval ?? 100;
  const deadline = Date.now() + timeout;
  const seen: Seen<T> = {};
  for (;;) {
    try {
      seen.value = await read(Math.max(1, deadline - Date.now()));
      seen.error = undefined;
      if (done(seen.value)) return seen.value;
    } catch (error) {
      seen.error = error;
    }
    if (Date.now() + interval > deadline) {
      throw new Error(failure(seen, timeout), seen.error === undefined ? undefined : { cause: seen.error });
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/** One line for an error seen while polling. */
function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * Waits until no run holds the thread (no tab or worker of the page's origin
 * holds its `runOnThread` lock, as `isThreadRunning` reports), and the latest
 * checkpoint is committed and stays the same for `stableFor` ms.
 *
 * @returns The latest checkpoint's id.
 * @throws after `timeout`, saying whether the thread was still running and which checkpoint was latest.
 */
export async function waitForThreadIdle(
  page: Page,
  threadId: string,
  options: WaitForThreadIdleOptions = {},
): Promise<string> {
  const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
  const stableFor = options.stableFor ?? 250;
  let quietSince: { at: number; checkpointId: string } | undefined;
  const activity = await poll<PageThreadActivity>(
    page,
    options,
    (remaining) =>
      callPage(page, "waitForThreadIdle", "activity", threadId, {
        ...pageDb(options),
        checkpointNs: options.checkpointNs,
        blockedTimeoutMs: remaining,
      }),
    (seen) => {
      const quiet = !seen.running && seen.checkpointId !== undefined && seen.checkpointId !== options.since;
      if (!quiet) {
        quietSince = undefined;
        return false;
      }
      const since: { at: number; checkpointId: string } =
        quietSince && quietSince.checkpointId === seen.checkpointId
          ? quietSince
          : { at: Date.now(), checkpointId: seen.checkpointId! };
      quietSince = since;
      return Date.now() - since.at >= stableFor;
    },
    (seen, timeout) => {
      const last = seen.value;
      const state = !last
        ? "nothing could be read"
        : last.deletedHere
          ? `the page's origin had no IndexedDB database "${dbName}": it was deleted in this page by clearThreads({ deleteDatabase: true }) (the fixture's langgraph.clear), and nothing opened it again`
          : last.databases
            ? `the page's origin had no IndexedDB database "${dbName}" (it had ${last.databases.length ? last.databases.map((name) => JSON.stringify(name)).join(", ") : "none"}): pass the dbName your app gives its IndexedDBSaver (or, if that is its name, let the app open its saver)`
            : last.running
              ? `a run still held the thread (latest checkpoint ${last.checkpointId ?? "none"})`
              : last.checkpointId === undefined
                ? "no run held it, and it had no checkpoint yet"
                : last.checkpointId === options.since
                  ? `no run held it, and its latest checkpoint was still ${last.checkpointId} (the one given as since)`
                  : `no run held it, latest checkpoint ${last.checkpointId}, not yet stable for ${stableFor} ms`;
      const error = seen.error === undefined ? "" : `; the last read failed: ${describeError(seen.error)}`;
      return `waitForThreadIdle: thread "${threadId}" of database "${dbName}" was not idle after ${timeout} ms: last seen, ${state}${error}.`;
    },
  );
  return activity.checkpointId!;
}

/**
 * Waits until the thread's latest checkpoint (as {@link readThreadState}
 * gives it) passes `predicate`, and returns that state.
 *
 * @throws after `timeout`, with the last state seen (or the last error).
 * @example
 * ```ts
 * await waitForCheckpoint(page, "t1", (state) => state.values.messages.length === 4, { dbName: "my-app" });
 * ```
 */
export async function waitForCheckpoint(
  page: Page,
  threadId: string,
  predicate: (state: PageThreadState) => boolean,
  options: WaitOptions & Omit<ReadThreadStateOptions, "dbName"> = {},
): Promise<PageThreadState> {
  const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
  let predicateError: unknown;
  const state = await poll<PageThreadState | undefined>(
    page,
    options,
    (remaining) => readThreadState(page, threadId, { ...options, dbName, blockedTimeoutMs: remaining }),
    (seen) => {
      if (!seen) return false;
      try {
        predicateError = undefined;
        return predicate(seen);
      } catch (error) {
        predicateError = error;
        return false;
      }
    },
    (seen, timeout) => {
      const head = `waitForCheckpoint: no checkpoint of thread "${threadId}" in database "${dbName}" passed the predicate within ${timeout} ms.`;
      if (seen.error !== undefined) return `${head} The last read failed: ${describeError(seen.error)}`;
      if (!seen.value) return `${head} The thread had no checkpoint.`;
      const threw = predicateError === undefined ? "" : ` The predicate threw: ${describeError(predicateError)}.`;
      return `${head}${threw} Last seen: checkpoint ${seen.value.checkpointId}, values ${preview(seen.value.values)}`;
    },
  );
  return state!;
}

/** JSON of `value`, cut to a readable length. */
export function preview(value: unknown, max = 2000): string {
  const text = JSON.stringify(value, null, 2) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}
