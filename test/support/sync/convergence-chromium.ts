/**
 * The convergence run's Chromium device: a real page (test/pages/convergence.ts)
 * on the real IndexedDB, its SyncClient on the page's own fetch, driven
 * from Node over Playwright with the same operations as the Node devices
 * (convergence-device.ts). Each device is a browser context of its own (a
 * profile: its own IndexedDB), so closing its tab and opening another one
 * on the same profile is the fault "a tab closed mid-round": the new tab
 * must find a whole database and finish what the closed one started.
 *
 * The page is built once per world with Vite and served by Vite's preview
 * server; it reaches the sync servers through the device's cutting proxy,
 * another origin (the servers allow it by CORS, as a deployment serving
 * apps from another origin does).
 */
import { join, resolve, dirname } from "node:path";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright";
import { build, preview, type PreviewServer } from "vite";
import { chromiumArgs, chromiumPath } from "../chromium.js";
import type { Reaper } from "../reaper.js";
import type { DeviceOps, DeviceSetup, RoundOutcome, RunFailure, StateSummary } from "./convergence-device.js";
import type { DeviceRows } from "./convergence-rows.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const pages = join(root, "test", "pages");

/** The built page, its server and one browser: what every Chromium device of a world shares. */
export interface ChromiumSite {
  origin: string;
  browser: Browser;
  close(): Promise<void>;
}

/**
 * Builds the device page (into node_modules/.cache, held by `reaper` until
 * removed), serves it, and launches Chromium. Playwright drives Chromium
 * through a pipe: a test process that dies, however, closes it and
 * Chromium exits with it.
 */
export async function startChromiumSite(reaper: Reaper): Promise<ChromiumSite> {
  const outDir = join(root, "node_modules", ".cache", `lgidb-convergence-page-${process.pid}`);
  const release = reaper.hold({ remove: outDir });
  let site: PreviewServer | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    if (site) await new Promise((done) => site!.httpServer.close(done));
    rmSync(outDir, { recursive: true, force: true });
    release();
  };
  try {
    await build({
      root: pages,
      configFile: false,
      logLevel: "error",
      build: { outDir, emptyOutDir: true, minify: false, rollupOptions: { input: join(pages, "convergence.html") } },
    });
    site = await preview({
      root: pages,
      configFile: false,
      logLevel: "error",
      build: { outDir },
      preview: { host: "127.0.0.1", port: 0 },
    });
    browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
    const origin = `http://127.0.0.1:${(site.httpServer.address() as { port: number }).port}`;
    return { origin, browser, close };
  } catch (error) {
    await close();
    throw error;
  }
}

type OpName = Exclude<keyof DeviceOps, "close">;

/**
 * A device in a Chromium page: {@link DeviceOps} over `page.evaluate`, and
 * {@link closeTabMidRound}. `beforePull` runs in Node before each pull
 * the page sends (the run's page check).
 */
export class ChromiumDevice implements DeviceOps {
  #page!: Page;
  /** Called at each event the page reports: a request out, its answer back, "end" when a started round ends. */
  #onEvent: ((event: string) => void) | undefined;
  /** True while the run closes the tab: what the closing page still reports is dropped. */
  #closing = false;

  private constructor(
    readonly context: BrowserContext,
    readonly site: ChromiumSite,
    readonly setup: DeviceSetup,
  ) {}

  /** Opens a context (a new profile) and the device's first tab. */
  static async open(site: ChromiumSite, setup: DeviceSetup, beforePull: () => Promise<void>): Promise<ChromiumDevice> {
    const context = await site.browser.newContext();
    const device = new ChromiumDevice(context, site, setup);
    try {
      await context.exposeFunction("convergenceBeforePull", () => (device.#closing ? undefined : beforePull()));
      await context.exposeFunction("convergenceEvent", (event: string) => device.#onEvent?.(event));
      await device.#openTab();
      return device;
    } catch (error) {
      await context.close();
      throw error;
    }
  }

  async #openTab(): Promise<void> {
    this.#page = await this.context.newPage();
    await this.#page.goto(`${this.site.origin}/convergence.html`);
    await this.#page.waitForFunction(() => document.title === "ready");
    await this.#page.evaluate((setup) => window.convergence.open(setup), this.setup);
  }

  /** Calls one of the page device's operations. */
  #call<K extends OpName>(name: K, ...args: Parameters<DeviceOps[K]>): Promise<Awaited<ReturnType<DeviceOps[K]>>> {
    return this.#page.evaluate(([op, list]) => (window.convergence.ops[op] as (...a: unknown[]) => unknown)(...list), [
      name,
      args,
    ] as [OpName, unknown[]]) as Promise<Awaited<ReturnType<DeviceOps[K]>>>;
  }

  invoke(input: { log: string[] } | null, configurable: Record<string, unknown>): Promise<RunFailure | null> {
    return this.#call("invoke", input, configurable);
  }
  failedThreads(threads: string[]): Promise<string[]> {
    return this.#call("failedThreads", threads);
  }
  rootIds(thread: string): Promise<string[]> {
    return this.#call("rootIds", thread);
  }
  copyThread(from: string, to: string): Promise<void> {
    return this.#call("copyThread", from, to);
  }
  deleteThread(thread: string): Promise<void> {
    return this.#call("deleteThread", thread);
  }
  prune(thread: string, keepLast: number): Promise<void> {
    return this.#call("prune", thread, keepLast);
  }
  deleteForRuns(runId: string, thread: string): Promise<void> {
    return this.#call("deleteForRuns", runId, thread);
  }
  syncNow(): Promise<RoundOutcome> {
    return this.#call("syncNow");
  }
  rows(full: boolean): Promise<DeviceRows> {
    return this.#call("rows", full);
  }
  head(thread: string, ns: string): Promise<string | undefined> {
    return this.#call("head", thread, ns);
  }
  state(thread: string): Promise<StateSummary> {
    return this.#call("state", thread);
  }

  /**
   * The fault "a tab closed mid-round": starts a round, closes the tab
   * `delayMs` after the round's first `event` (a request going out, like
   * `POST /v1/push`, or its answer coming back, like `/v1/pull answered`;
   * or after the round's end, if it had none), then opens a new tab on the
   * same profile, which must take over. Says where the close landed.
   */
  async closeTabMidRound(event: string, delayMs: number): Promise<string> {
    let seen = 0;
    let where = "";
    const reached = new Promise<void>((done) => {
      this.#onEvent = (name) => {
        seen += 1;
        if (name === "end") where ||= `after the round's end (${seen - 1} events, no ${event})`;
        else if (name === event) where = `mid-round, at ${name}`;
        else return;
        done();
      };
    });
    await this.#page.evaluate(() => window.convergence.startRound());
    await reached;
    await new Promise((done) => setTimeout(done, delayMs));
    this.#closing = true;
    this.#onEvent = undefined;
    try {
      await this.#page.close();
    } finally {
      this.#closing = false;
    }
    await this.#openTab();
    return `closed ${where} +${Math.round(delayMs)} ms, reopened`;
  }

  async close(): Promise<void> {
    await this.context.close();
  }
}

declare global {
  interface Window {
    /** The device page's entry (test/pages/convergence.ts). */
    convergence: {
      open(setup: DeviceSetup): Promise<void>;
      readonly ops: DeviceOps;
      startRound(): void;
    };
  }
}
