/**
 * What every end-to-end test shares: launching Debian's Chromium, a fresh
 * context per test that records console errors (or, with `keepPage`, one
 * page per file that each test gets at a fresh thread; with `cleanPage`, one
 * page per file emptied between tests); it re-exports the chat
 * gestures (e2e/chat-gestures.ts), the page probes (e2e/page-probes.ts) and
 * the mocked model endpoint (e2e/mock-endpoint.ts).
 *
 * Pages open at the fast pace (`?pace=0`: the demo's local model answers at
 * once) unless a test asks for the model's pace: only tests about streaming,
 * Stop, or a run still in progress need it.
 */
import { chromium, type Browser, type BrowserContext, type Page } from "playwright";
import { afterAll, afterEach, beforeAll, beforeEach, expect, inject } from "vitest";
import { chromiumArgs, chromiumPath } from "../test/support/chromium.js";
import { ready, send } from "./chat-gestures.js";
import { emptyOrigin, StorageLeftError } from "./clean-origin.js";
import { lockWith } from "./page-probes.js";

export {
  assistants,
  longMessage,
  ready,
  screenshot,
  seedTurns,
  send,
  submit,
  threadAction,
  transcript,
  type ThreadAction,
} from "./chat-gestures.js";
export { cspViolations, editDemoDb, lockWith, plaintextHits, recordCspViolations, unlockWith } from "./page-probes.js";
export { MOCK_COMPLETIONS, mockAnswers, sse, useEndpoint } from "./mock-endpoint.js";

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
}

let shared: Promise<Browser> | undefined;

/**
 * One Chromium per test worker, shared by the files it runs one after
 * another (the e2e configs set `isolate: false`): each test still gets a
 * fresh context, i.e. fresh storage, and a launch is seconds of CPU on
 * this 2-core machine. Playwright ends the browser when the worker exits.
 */
function sharedChromium(): Promise<Browser> {
  shared ??= launchChromium().then((browser) => {
    browser.once("disconnected", () => (shared = undefined));
    return browser;
  });
  return shared;
}

/**
 * How the demo's local model answers: `fast` (at once, `?pace=0`), `model`
 * (thinks 150 ms, then streams in 15 ms steps, as a remote model would) or
 * `slow` (60 ms steps, `?pace=slow`: a long answer takes about 9 s).
 */
export type Pace = "fast" | "model" | "slow";

/** What a harness opens: the viewport of its context and the pace of its pages. */
export interface HarnessOptions {
  viewport?: { width: number; height: number };
  /** The pace of the pages this harness opens (default `fast`). */
  pace?: Pace;
  /**
   * Whether the built app's service worker may register (default: blocked).
   * Each fresh context would otherwise precache the whole app again; only
   * the offline test is about it.
   */
  serviceWorkers?: "allow" | "block";
  /** What the context's storage starts with (default: empty); see {@link storageMadeBy}. */
  storageState?: StorageState;
  /**
   * One context for the file's tests, and one page in it that {@link Harness.thread} hands each test
   * at a fresh thread, instead of a fresh context and a page boot (about 1.7 CPU-s) per test. A test
   * on it must not need empty storage (other tests' threads, memories and settings are there) and
   * must leave nothing that outlives it in the page (settings, page-level patches, a clock): those
   * take a context of their own (a second `useHarness()` of the file). The page is booted afresh
   * after a test that failed or left it busy (a dialog open, an answer streaming).
   */
  keepPage?: boolean;
  /**
   * One context for the file's tests, each starting on empty storage as in a fresh one: the first
   * {@link Harness.page} of a test is the page the test before had, its origin emptied since
   * (e2e/clean-origin.ts). It keeps its renderer, so its boot costs about 0.65 CPU-s instead of 1.5. A test
   * on it must leave no other context-wide state (permissions, init scripts, offline); a clock, a failure or
   * a page that could not be emptied gets the next test a fresh context.
   */
  cleanPage?: boolean;
}

/** A context's cookies and origins' storage, IndexedDB included: Playwright's `storageState({ indexedDB: true })`. */
export type StorageState = Awaited<ReturnType<BrowserContext["storageState"]>>;

/** A fresh context (fresh storage) whose pages record console errors and uncaught exceptions. */
export class Harness {
  readonly errors: string[] = [];
  context!: BrowserContext;
  #options: HarnessOptions = {};
  /** The page {@link thread} hands out (with `keepPage`), while it stays usable. */
  #kept: Page | undefined;
  /** With `cleanPage`: the page the first {@link page} of a test gets, and whether this test has had it. */
  #clean: Page | undefined;
  #cleanTaken = true;
  /** A clock is the whole context's, for good: set once a test installs one. */
  #clocked = false;

  constructor(
    readonly browser: Browser,
    readonly baseURL: string,
    readonly pace: Pace = "fast",
  ) {}

  async open(options: HarnessOptions = {}): Promise<this> {
    this.#options = options;
    this.context = await this.browser.newContext({
      viewport: options.viewport ?? { width: 1280, height: 800 },
      acceptDownloads: true,
      serviceWorkers: options.serviceWorkers ?? "block",
      storageState: options.storageState,
    });
    // Playwright's 30 s for a wait is tight when two Chromiums share 2 cores; tests still end at 60 s.
    this.context.setDefaultTimeout(45_000);
    this.#clean = undefined;
    this.#clocked = false;
    // Only a kept, emptied page must know of a clock (endCleanTest gives the next test a fresh context).
    if (options.cleanPage) {
      const clock = this.context.clock;
      const install = clock.install.bind(clock);
      clock.install = (options) => ((this.#clocked = true), install(options));
    }
    return this;
  }

  /** A new tab on the demo at `path` (relative to the demo), at the harness's pace unless `pace` says otherwise. */
  async page(path = "", options: { pace?: Pace } = {}): Promise<Page> {
    const url = paced(new URL(path, this.baseURL), options.pace ?? this.pace);
    const first = !this.#cleanTaken;
    this.#cleanTaken = true;
    if (first && this.#clean && !this.#clean.isClosed()) {
      await this.#clean.goto(url);
      return this.#clean;
    }
    const page = await this.context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") this.errors.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => this.errors.push(`pageerror: ${error.message}`));
    if (first) this.#clean = page;
    await page.goto(url);
    return page;
  }

  /** Before a test of a `cleanPage` harness: its first {@link page} is the kept one. */
  beginCleanTest(): void {
    this.#cleanTaken = false;
  }

  /**
   * After a test of a `cleanPage` harness: closes its other pages and empties the origin in the one it keeps
   * (routes dropped, viewport and colour scheme the harness's again), or replaces the context after a
   * failure or a clock. Storage the emptying left fails the test.
   */
  async endCleanTest(failed: boolean): Promise<void> {
    const clean = this.#clean;
    for (const page of this.context.pages()) if (page !== clean) await page.close();
    if (!failed && !this.#clocked && clean && !clean.isClosed()) {
      try {
        await clean.unrouteAll({ behavior: "wait" });
        await this.context.unrouteAll({ behavior: "wait" });
        await clean.setViewportSize(this.#options.viewport ?? { width: 1280, height: 800 });
        await clean.emulateMedia({ colorScheme: null });
        await emptyOrigin(this.context, clean, this.baseURL);
        // Said while the app's document went away: a closed context drops these too.
        this.errors.splice(0);
        return;
      } catch (error) {
        // Storage left behind fails the test (the next one gets a fresh context); a page that could not
        // be taken off the app (it crashed, say) only costs the next test a fresh context.
        await this.restart(undefined);
        if (error instanceof StorageLeftError) throw error;
        return;
      }
    }
    await this.restart(undefined);
  }

  async close(): Promise<void> {
    await this.context?.close();
  }

  /**
   * The harness's kept page (booted at the first call) at a new, empty thread, at `pace` (default: the
   * harness's): for tests that start from a thread of their own and need no fresh storage (see
   * {@link HarnessOptions.keepPage}). The viewport and colour scheme are the harness's again.
   */
  async thread(options: { pace?: Pace } = {}): Promise<Page> {
    const pace = options.pace ?? this.pace;
    // A thread no test has used (ids are letters and digits), named by the address.
    const id = `T${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`.toUpperCase();
    if (!this.#kept || this.#kept.isClosed()) {
      this.#kept = await this.page(`#/thread/${id}`, { pace });
      await ready(this.#kept);
      return this.#kept;
    }
    const page = this.#kept;
    await page.setViewportSize(this.#options.viewport ?? { width: 1280, height: 800 });
    await page.emulateMedia({ colorScheme: null });
    await setPace(page, pace);
    // The app opens the thread on hashchange (its listener came first), then this one resolves.
    await page.evaluate(
      (id) =>
        new Promise<void>((opened) => {
          addEventListener("hashchange", () => opened(), { once: true });
          location.hash = `#/thread/${id}`;
        }),
      id,
    );
    await page.waitForFunction(
      () => document.querySelector(".welcome") !== null && document.querySelector('[data-testid="message"]') === null,
      undefined,
      { polling: 50 },
    );
    return page;
  }

  /**
   * After a test of a `keepPage` harness: closes the pages it opened besides the kept one, drops its
   * routes, stops an answer still streaming (a closed context used to end it), and gives the kept page
   * up (closing the context) if the test failed or left it otherwise busy (a dialog or History open),
   * so that the next test starts from a fresh one.
   */
  async endTest(failed: boolean): Promise<void> {
    for (const page of this.context.pages()) if (page !== this.#kept) await page.close();
    const kept = this.#kept;
    // A test that closed the kept page passed it on as it was: the next one boots another in this context.
    if (!failed && (!kept || kept.isClosed())) return void (this.#kept = undefined);
    if (!failed && (await this.#settle(kept!))) return;
    this.#kept = undefined;
    await this.restart(undefined);
  }

  /** Whether `page` is left as {@link thread} can use it, once its routes are gone and its run stopped. */
  async #settle(page: Page): Promise<boolean> {
    try {
      await page.unrouteAll({ behavior: "wait" });
      const stop = page.getByTestId("stop");
      // (It may end by itself meanwhile: then the click has nothing to do.)
      if (await stop.isVisible()) await stop.click({ timeout: 2_000 }).catch(() => undefined);
      await stop.waitFor({ state: "hidden", timeout: 10_000 });
      return await page.evaluate(
        () =>
          document.querySelector("dialog[open], .message.streaming") === null &&
          !document.getElementById("history")?.checkVisibility() &&
          document.querySelector('[data-testid="composer"]') !== null,
      );
    } catch {
      return false;
    }
  }

  /**
   * Replaces this harness's context (no page of it may be open) by a fresh
   * one whose storage starts as `state`: a set-up the app made once, copied
   * into each test that starts from it instead of being made again.
   */
  async restart(state: StorageState | undefined): Promise<this> {
    await this.context.close();
    return this.open({ ...this.#options, storageState: state });
  }
}

/**
 * The storage `make` leaves in a context of its own (IndexedDB included), for
 * {@link Harness.restart}: a set-up several tests of a file start from, made
 * once by driving the app as a test does. A console error fails it as it
 * fails a test.
 */
export async function storageMadeBy(make: (harness: Harness) => Promise<void>): Promise<StorageState> {
  const harness = await new Harness(await sharedChromium(), inject("baseURL")).open();
  try {
    await make(harness);
    const state = await harness.context.storageState({ indexedDB: true });
    expect(harness.errors).toEqual([]);
    return state;
  } finally {
    await harness.close();
  }
}

/** The passphrase the lock tests lock with (long enough for the app's minimum). */
export const PASSPHRASE = "correct horse battery staple";

/**
 * A vault made once by the app as a user makes it ({@link storageMadeBy}): one thread per text of
 * `threads`, each its first message, the last one open, then locked with `passphrase` and left at rest
 * behind the lock screen.
 */
export function lockedVaultOf(threads: string[], passphrase: string): Promise<StorageState> {
  return storageMadeBy(async (setup) => {
    const page = await setup.page();
    await ready(page);
    for (const [i, text] of threads.entries()) {
      if (i > 0) await page.getByTestId("new-thread").click();
      await send(page, text);
      // expect.poll is for tests only: the thread's row is waited for, then the count checked.
      await page.getByTestId("thread").nth(i).waitFor();
    }
    expect(await page.getByTestId("thread").count()).toBe(threads.length);
    await lockWith(page, passphrase);
    await page.keyboard.press("Escape");
    await page.reload();
    await page.getByTestId("unlock-passphrase").waitFor();
  });
}

/** `url` with the demo's pace parameter for `pace`; a pace the address already names is kept. */
export function paced(url: URL, pace: Pace): string {
  const next = new URL(url);
  if (pace !== "model" && !next.searchParams.has("pace")) next.searchParams.set("pace", pace === "fast" ? "0" : "slow");
  return next.href;
}

/**
 * Sets the pace of the local model's next answers in `page`, without a
 * reload: the model reads `pace` from the page's address at each answer
 * (demo/src/model.ts), so the address is rewritten in place
 * (`history.replaceState`). Cheaper than a reload (a boot, about 1.7
 * CPU-s): set-up turns at once, then the answer a test watches at its pace.
 */
export async function setPace(page: Page, pace: Pace): Promise<void> {
  const url = new URL(page.url());
  if (pace === "model") url.searchParams.delete("pace");
  else url.searchParams.set("pace", pace === "fast" ? "0" : "slow");
  await page.evaluate((href) => history.replaceState(history.state, "", href), url.href);
}

/**
 * Registers the hooks of a test file: the worker's Chromium, a fresh
 * context per test, and no console error allowed. Returns the current harness.
 */
export function useHarness(options: HarnessOptions = {}): () => Harness {
  let browser: Browser;
  let harness: Harness | undefined;
  beforeAll(async () => {
    browser = await sharedChromium();
  });
  if (options.keepPage || options.cleanPage) {
    beforeEach(async () => {
      harness ??= await new Harness(browser, inject("baseURL"), options.pace).open(options);
      if (options.cleanPage) harness.beginCleanTest();
    });
    afterEach(async ({ task }) => {
      // Its open failed in beforeEach: that error is the test's, not a TypeError here.
      if (!harness) return;
      const errors = harness.errors.splice(0);
      const failed = task.result?.state === "fail" || errors.length > 0;
      await (options.cleanPage ? harness.endCleanTest(failed) : harness.endTest(failed));
      expect(errors).toEqual([]);
    });
    afterAll(async () => {
      await harness?.close();
      harness = undefined;
    });
  } else {
    beforeEach(async () => {
      harness = await new Harness(browser, inject("baseURL"), options.pace).open(options);
    });
    afterEach(async () => {
      await harness!.close();
      expect(harness!.errors).toEqual([]);
    });
  }
  return () => harness!;
}

/**
 * A new page of `harness`'s context whose timers run on a clock the test
 * moves forward (`page.clock`), loaded and ready, with `message` sent.
 */
export async function clockedPage(harness: Harness, message: string): Promise<Page> {
  const page = await harness.context.newPage();
  await page.clock.install();
  await page.goto(new URL("?pace=0", harness.baseURL).href);
  await ready(page);
  await send(page, message);
  return page;
}
