/**
 * Reading the app's `SyncClient` status from a test. A SyncClient posts
 * every status change on a BroadcastChannel of its database (so that other
 * tabs show the syncing tab's status); a small init script listens there in
 * each document of the context, from before the app's own scripts run, and
 * keeps the latest status. The test reads it, or waits for one it expects.
 */
import type { BrowserContext, Page } from "playwright";
import { crossTabName } from "../core/channel.js";
import type { SyncStatus } from "../sync/client.js";
import { DEFAULT_PAGE_DB_NAME, type PageDatabaseOptions } from "./threads.js";
import { poll, preview, type WaitOptions } from "./waits.js";

/** The global the recorder keeps statuses under: channel name to the latest status. */
export const SYNC_STATUS_KEY = "__langgraphIndexedDBSyncStatus_v1";

/** A SyncClient's status as a test reads it: {@link SyncStatus} and when the page received it. */
export type PageSyncStatus = SyncStatus & {
  /** When this page received it (ms since the epoch). */
  receivedAt: number;
};

/**
 * Runs in the page (serialized by `addInitScript`, so it imports nothing):
 * records the latest status posted on `channel` under `globalThis[key]`.
 * A BroadcastChannel receives what every other channel object of the origin
 * posts, including the app's SyncClient in the same document.
 */
export function recordSyncStatus({ key, channel }: { key: string; channel: string }): void {
  const store = ((globalThis as Record<string, unknown>)[key] ??= {}) as Record<string, unknown>;
  if (Object.hasOwn(store, channel) || typeof BroadcastChannel !== "function") return;
  store[channel] = null;
  new BroadcastChannel(channel).onmessage = (event: MessageEvent) => {
    const data = event.data as { v?: unknown; status?: Record<string, unknown> } | null;
    if (data?.v === 1 && data.status) store[channel] = { ...data.status, receivedAt: Date.now() };
  };
}

function channelOf(options: PageDatabaseOptions): string {
  return crossTabName({ kind: "sync-status", dbName: options.dbName ?? DEFAULT_PAGE_DB_NAME });
}

/**
 * Starts recording the SyncClient status of a database in every page of
 * `context`, from their next navigation on: call it before `page.goto` (the
 * `langgraph` fixture does). Statuses posted before a document loaded are
 * not replayed; the next change is seen.
 */
export async function trackSyncStatus(context: BrowserContext, options: PageDatabaseOptions = {}): Promise<void> {
  await context.addInitScript(recordSyncStatus, { key: SYNC_STATUS_KEY, channel: channelOf(options) });
}

/**
 * The latest status any SyncClient of the page's origin posted for the
 * database (this tab's, or the tab that syncs), or `undefined` when none has
 * posted since the page loaded.
 *
 * @throws when the page loaded before {@link trackSyncStatus}.
 */
export async function readSyncStatus(
  page: Page,
  options: PageDatabaseOptions = {},
): Promise<PageSyncStatus | undefined> {
  const channel = channelOf(options);
  const status = await page.evaluate(
    ([key, name]) => {
      const store = (globalThis as unknown as Record<string, Record<string, unknown> | undefined>)[key];
      return store && Object.hasOwn(store, name) ? { status: store[name] } : undefined;
    },
    [SYNC_STATUS_KEY, channel] as const,
  );
  if (!status) {
    throw new Error(
      `readSyncStatus: this page does not record the SyncClient status of database "${options.dbName ?? DEFAULT_PAGE_DB_NAME}". Call trackSyncStatus(page.context(), { dbName }) before page.goto (the langgraph fixture does), or reload the page after it.`,
    );
  }
  return (status.status ?? undefined) as PageSyncStatus | undefined;
}

/** Options of {@link waitForSyncStatus}. */
export interface WaitForSyncStatusOptions extends WaitOptions {
  /**
   * Accept only the status of a client whose last completed full round
   * began after this time (ms since the epoch, the page's clock:
   * `SyncStatus.lastSyncStartedAt`). Take it once the app's write has
   * committed (`Date.now()` after the `page.evaluate` or the wait that saw
   * it): such a round pushed the write. Without it, the latest status may be
   * that of a round from before the write, `idle` with `pending: 0`.
   * Strictly after: `Date.now()` counts whole ms, and a round begun in the
   * same ms as `since` may have begun before the write.
   */
  since?: number;
}

/**
 * Waits until the page has received a SyncClient status that passes
 * `predicate` (e.g. `(s) => s.state === "idle" && s.pending === 0`), and
 * with `since`, that of a round that began after it: the way to wait until
 * what the app wrote before `since` is on the server.
 *
 * @example
 * ```ts
 * await page.getByRole("button", { name: "Send" }).click();
 * await waitForThreadIdle(page, "t1");
 * const since = Date.now(); // the run's checkpoints are committed
 * await waitForSyncStatus(page, (s) => s.state === "idle" && s.pending === 0, { since });
 * ```
 *
 * @throws after `timeout`, with the last status seen.
 */
export async function waitForSyncStatus(
  page: Page,
  predicate: (status: PageSyncStatus) => boolean,
  options: WaitForSyncStatusOptions = {},
): Promise<PageSyncStatus> {
  const { since } = options;
  // A status that predates the round the caller waits for says nothing about the write: skip it.
  const recent = (status: PageSyncStatus) =>
    since === undefined || (status.lastSyncStartedAt !== undefined && status.lastSyncStartedAt > since);
  // No page script needed: the recorder was installed by trackSyncStatus.
  const status = await poll<PageSyncStatus | undefined>(
    undefined,
    options,
    () => readSyncStatus(page, options),
    (seen) => seen !== undefined && recent(seen) && predicate(seen),
    (seen, timeout) => {
      const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
      const last = seen.error
        ? `the last read failed: ${seen.error instanceof Error ? seen.error.message : String(seen.error)}`
        : seen.value
          ? `last seen: ${preview(seen.value)}`
          : "no SyncClient posted a status since the page loaded";
      const which =
        since === undefined
          ? ""
          : ` of a round that began after ${new Date(since).toISOString()} (since: ${since})${seen.value && !recent(seen.value) ? ", and the last status seen is of an earlier round" : ""}`;
      return `waitForSyncStatus: no SyncClient status of database "${dbName}"${which} passed the predicate within ${timeout} ms; ${last}.`;
    },
  );
  return status!;
}
