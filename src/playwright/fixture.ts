/**
 * `langgraphTest`: Playwright Test's `test`, extended with a `langgraph`
 * object bound to the test's page and the app's database, and an `expect`
 * that has the thread matchers. Options come from `test.use({ langgraph: { … } })`
 * or, the same, `test.use({ langgraphOptions: { … } })`.
 * After each test the database is deleted with its wipe marker and journal,
 * so the next test (or a reused context) starts from nothing.
 */
// Types only: the runner itself is loaded by test-runner.ts, where it is installed. Its types are
// `playwright/test`'s (`@playwright/test` re-exports them), so that the declarations of a project
// with `playwright` alone compile.
import type {
  Expect,
  Fixtures,
  Page,
  PlaywrightTestArgs,
  PlaywrightTestOptions,
  PlaywrightWorkerArgs,
  PlaywrightWorkerOptions,
  TestType,
} from "playwright/test";
import type { AppEncryption } from "./encryption.js";
import { setMatcherDefaults, threadMatchers } from "./matchers.js";
import type { PageThreadState, SeededThread } from "./protocol.js";
import {
  DEFAULT_PAGE_DB_NAME,
  clearThreads,
  exportThreadFromPage,
  readThreadState,
  restoreThreads,
  seedThread,
  snapshotThreads,
  type ReadThreadStateOptions,
  type SeedThreadOptions,
  type ThreadFileInput,
} from "./threads.js";
import {
  readSyncStatus,
  trackSyncStatus,
  waitForSyncStatus,
  type PageSyncStatus,
  type WaitForSyncStatusOptions,
} from "./sync-status.js";
import { openTab, setOffline } from "./tabs.js";
import { loadTestRunner, unavailable, type PlaywrightTestModule } from "./test-runner.js";
import { waitForCheckpoint, waitForThreadIdle, type WaitForThreadIdleOptions, type WaitOptions } from "./waits.js";

/** Options of the `langgraph` fixture, set with `test.use({ langgraph: { … } })` or `test.use({ langgraphOptions: { … } })`. */
export interface LanggraphOptions {
  /** The `dbName` the app gives its IndexedDBSaver; default `"langgraph"`. */
  dbName?: string;
  /** The app's `EncryptedSerializer` settings, when it encrypts (a passphrase and salt, or the key). */
  encryption?: AppEncryption;
  /**
   * After each test: `"database"` (default) deletes the database with its
   * wipe marker and journal; `"threads"` deletes its threads only; `false`
   * keeps everything (for a test that saves a storage state).
   */
  cleanup?: "database" | "threads" | false;
}

/** Every thread of a database as exports, from `langgraph.snapshot()`. */
export interface ThreadsSnapshot {
  /** The database it was taken from. */
  dbName: string;
  /** Thread id to `.lgthread` bytes. */
  threads: Map<string, Uint8Array>;
}

/** What a test gets as `langgraph`: the helpers, bound to its page and database. */
export interface LanggraphFixture {
  /** The page the helpers act on (the test's `page`). */
  readonly page: Page;
  /** The database they use. */
  readonly dbName: string;
  /** {@link seedThread} into this database. */
  seed(file: ThreadFileInput, options?: Omit<SeedThreadOptions, "dbName" | "encryption">): Promise<SeededThread>;
  /** {@link readThreadState} of this database. */
  read(
    threadId: string,
    options?: Omit<ReadThreadStateOptions, "dbName" | "encryption">,
  ): Promise<PageThreadState | undefined>;
  /** Deletes threads (all by default), or the database with its marker and journal (`{ deleteDatabase: true }`). */
  clear(options?: { threadIds?: string[]; deleteDatabase?: boolean }): Promise<void>;
  /** {@link waitForThreadIdle} on this database. */
  waitForIdle(threadId: string, options?: Omit<WaitForThreadIdleOptions, "dbName" | "encryption">): Promise<string>;
  /** {@link waitForCheckpoint} on this database. */
  waitForCheckpoint(
    threadId: string,
    predicate: (state: PageThreadState) => boolean,
    options?: Omit<WaitOptions & ReadThreadStateOptions, "dbName" | "encryption">,
  ): Promise<PageThreadState>;
  /** {@link exportThreadFromPage} from this database. */
  exportThread(threadId: string): Promise<Uint8Array>;
  /** Every thread of the database, exported. */
  snapshot(): Promise<ThreadsSnapshot>;
  /**
   * Replaces the database's threads with those of a snapshot. Every export is
   * read with the app's serializer before anything changes: one that cannot
   * be read (a wrong key) fails the call with the database untouched.
   */
  restore(snapshot: ThreadsSnapshot): Promise<void>;
  /** {@link openTab}: a second tab of the app on the same storage, with these helpers bound to it. */
  openTab(url?: string): Promise<LanggraphFixture>;
  /** {@link setOffline} for the page's context (every tab), waiting until the page sees it. */
  setOffline(offline: boolean): Promise<void>;
  /** {@link readSyncStatus}: the app's latest SyncClient status for this database, if one was posted. */
  syncStatus(): Promise<PageSyncStatus | undefined>;
  /**
   * {@link waitForSyncStatus} for this database; `{ since }` (a time taken
   * after the app's write committed) waits for a round that began after it.
   */
  waitForSyncStatus(
    predicate: (status: PageSyncStatus) => boolean,
    options?: Omit<WaitForSyncStatusOptions, "dbName" | "encryption">,
  ): Promise<PageSyncStatus>;
}

/** True when the page has an origin with IndexedDB (it has navigated to the app). */
async function hasOrigin(page: Page): Promise<boolean> {
  if (page.isClosed()) return false;
  return page.evaluate(() => typeof indexedDB !== "undefined" && location.origin !== "null").catch(() => false);
}

/** The helpers bound to `page` and the app's database. */
function bind(page: Page, options: LanggraphOptions): LanggraphFixture {
  const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
  const db = { dbName, encryption: options.encryption };
  // The docs pair the fixture's options with the matchers: they read the same database.
  setMatcherDefaults(page, db);
  return {
    page,
    dbName,
    seed: (file, options) => seedThread(page, file, { ...options, ...db }),
    read: (threadId, options) => readThreadState(page, threadId, { ...options, ...db }),
    clear: async (options) => {
      await clearThreads(page, { ...options, ...db });
    },
    waitForIdle: (threadId, options) => waitForThreadIdle(page, threadId, { ...options, ...db }),
    waitForCheckpoint: (threadId, predicate, options) =>
      waitForCheckpoint(page, threadId, predicate, { ...options, ...db }),
    exportThread: (threadId) => exportThreadFromPage(page, threadId, db),
    snapshot: async () => ({ dbName, threads: await snapshotThreads(page, db) }),
    restore: async (snapshot) => {
      await restoreThreads(page, snapshot.threads, db);
    },
    openTab: async (url) => bind(await openTab(page, url), options),
    setOffline: (offline) => setOffline(page, offline),
    syncStatus: () => readSyncStatus(page, db),
    waitForSyncStatus: (predicate, waitOptions) => waitForSyncStatus(page, predicate, { ...waitOptions, ...db }),
  };
}

/** The fixtures `langgraphTest` adds. */
export interface LanggraphTestFixtures {
  /**
   * The fixture's options, also given as `test.use({ langgraphOptions: { dbName: "my-app" } })`
   * (the spelling that suits a `test.extend` of your own).
   */
  langgraphOptions: LanggraphOptions;
  /**
   * The helpers, bound to the test's page. `test.use({ langgraph: { dbName: "my-app" } })` sets
   * their options: Playwright hands such a value to the test as it is, so the test's set-up
   * binds the helpers onto that object for the test, and takes them off again afterwards.
   */
  langgraph: LanggraphFixture;
  /** Binds the helpers onto options given as `test.use({ langgraph: { … } })` (internal, automatic). */
  _langgraphOptionsAsValue: void;
}

/** Sets the helpers up on `page`, hands them to `run`, then leaves nothing behind. */
async function withHelpers(
  page: Page,
  options: LanggraphOptions,
  run: (fixture: LanggraphFixture) => Promise<void>,
): Promise<void> {
  const dbName = options.dbName ?? DEFAULT_PAGE_DB_NAME;
  // Before the test's first navigation, so that the app's first status is seen.
  await trackSyncStatus(page.context(), { dbName });
  const helpers = bind(page, options);
  try {
    await run(helpers);
  } finally {
    setMatcherDefaults(page, undefined);
  }
  const cleanup = options.cleanup ?? "database";
  if (cleanup === false || !(await hasOrigin(page))) return;
  const exists = await page
    .evaluate(async (name) => (await indexedDB.databases()).some((db) => db.name === name), dbName)
    .catch(() => false);
  // Also when the database is gone: its wipe marker may not be.
  if (cleanup === "database" || !exists)
    await clearThreads(page, { dbName, deleteDatabase: true }).catch(() => undefined);
  else await clearThreads(page, { dbName, encryption: options.encryption });
}

/** Whether `value` is options given in place of the helpers (`test.use({ langgraph: { … } })`). */
function isOptionsValue(value: unknown): value is LanggraphOptions & Record<string, unknown> {
  return typeof value === "object" && value !== null && typeof (value as { seed?: unknown }).seed !== "function";
}

/** Playwright Test's `test` with the fixtures, and its `expect` with the matchers. */
function extendRunner({ test, expect }: PlaywrightTestModule): LanggraphTestType {
  const extended = test.extend<LanggraphTestFixtures>({
    langgraphOptions: [{}, { option: true }],
    langgraph: async ({ page, langgraphOptions }, use) => {
      await withHelpers(page, langgraphOptions, use);
    },
    _langgraphOptionsAsValue: [
      async ({ page, langgraph, langgraphOptions }, use) => {
        if (!isOptionsValue(langgraph)) return use();
        const options: LanggraphOptions = { ...langgraphOptions, ...langgraph };
        // The object is the one `test.use` was given, shared by the tests that use it: each test
        // binds its own helpers onto it, and puts the options back as they were afterwards.
        const given = { ...langgraph };
        await withHelpers(page, options, async (helpers) => {
          Object.assign(langgraph, helpers);
          try {
            await use();
          } finally {
            for (const key of Object.keys(langgraph)) delete langgraph[key];
            Object.assign(langgraph, given);
          }
        });
      },
      { auto: true },
    ],
  });
  // Playwright types `use({ langgraph })` as the helpers; the options object is accepted at run time
  // (the auto fixture `_langgraphOptionsAsValue` binds the helpers onto it), so the type says so.
  return withMatchers(extended, expect.extend(threadMatchers)) as unknown as LanggraphTestType;
}

/** The fixture where the runner loaded; otherwise a stand-in whose every use throws why it did not. */
function extendOrExplain(runner: PlaywrightTestModule | Error): LanggraphTestType {
  return runner instanceof Error ? unavailable<LanggraphTestType>(runner) : extendRunner(runner);
}

type LanggraphTestArgs = PlaywrightTestArgs & PlaywrightTestOptions & LanggraphTestFixtures;
type LanggraphWorkerArgs = PlaywrightWorkerArgs & PlaywrightWorkerOptions;

/** Playwright's `test` whose `expect` has the thread matchers, and whose `extend` keeps them. */
export interface TestWithThreadMatchers<TestArgs extends object, WorkerArgs extends object> extends TestType<
  TestArgs,
  WorkerArgs
> {
  /** Playwright's `expect` with `toHaveThreadMessages`, `toHaveCheckpointCount` and `toBeInterruptedAt`. */
  expect: Expect<typeof threadMatchers>;
  /**
   * Playwright's `test.extend`; the test it returns keeps the matchers on its `expect`, and
   * its `use` takes the `langgraph` options as this one does.
   */
  extend<T extends object, W extends object = object>(
    fixtures: Fixtures<T, W, TestArgs, WorkerArgs>,
  ): TestWithThreadMatchers<TestArgs & T, WorkerArgs & W>;
  /** Playwright's `test.use`, where `langgraph` may be given its options: `test.use({ langgraph: { dbName: "my-app" } })`. */
  use(
    fixtures: Omit<Fixtures<object, object, TestArgs, WorkerArgs>, "langgraph"> & {
      langgraph?: LanggraphOptions;
    },
  ): void;
  /** Playwright's `test.use`. */
  use(fixtures: Fixtures<object, object, TestArgs, WorkerArgs>): void;
}

// An interface, as it was: apps may merge declarations into it.
/** The type of {@link langgraphTest}: Playwright's `test` with the fixtures, whose `expect` has the matchers. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface LanggraphTestType extends TestWithThreadMatchers<LanggraphTestArgs, LanggraphWorkerArgs> {}

/**
 * Playwright Test's `test` with the `langgraph` fixture; extend it again
 * with `langgraphTest.extend({ … })`. Its `expect` (`langgraphTest.expect`)
 * has `toHaveThreadMessages`, `toHaveCheckpointCount` and `toBeInterruptedAt`.
 *
 * @example
 * ```ts
 * import { langgraphTest as test } from "langgraph-checkpoint-indexeddb/playwright";
 * const { expect } = test;
 * test.use({ langgraph: { dbName: "my-app" } });
 * test("answers", async ({ page, langgraph }) => {
 *   await page.goto("/");
 *   await langgraph.seed("fixtures/chat.lgthread", { threadId: "t1" });
 *   await expect(page).toHaveThreadMessages("t1", ["hi", /You said/]); // the fixture's dbName
 * });
 * ```
 */
export const langgraphTest: LanggraphTestType = extendOrExplain(loadTestRunner());

/**
 * `test` whose `expect` has the thread matchers, and whose `extend` returns
 * such a test again: Playwright gives an extended test its own plain
 * `expect`, so `langgraphTest.extend(…).expect` lost the matchers.
 */
function withMatchers<T extends { extend: (...args: never[]) => unknown }>(test: T, expect: unknown): T {
  const extend = test.extend.bind(test) as (...args: never[]) => { extend: (...args: never[]) => unknown };
  return Object.assign(test, {
    expect,
    extend: (...args: never[]) => withMatchers(extend(...args), expect),
  });
}
