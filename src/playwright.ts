/**
 * `langgraph-checkpoint-indexeddb/playwright`: helpers for apps tested with
 * Playwright. Seed a page's IndexedDBSaver database from an exported thread
 * file, read a thread's latest state from the page, clear threads.
 *
 * The page does not have to expose this library: the first call on a page
 * (and again after each navigation) injects a self-contained script with the
 * saver, serializer and importer (`page.evaluate`, which works on pages with a
 * strict Content-Security-Policy). IndexedDB needs a real origin, so go to
 * your app's URL first (not `about:blank`), and use the app's `dbName`.
 *
 * This module runs in Node (the Playwright test process) and only imports
 * Playwright's types: the package does not depend on Playwright.
 *
 * @example
 * ```ts
 * import { test, expect } from "@playwright/test";
 * import { clearThreads, readThreadState, seedThread } from "langgraph-checkpoint-indexeddb/playwright";
 *
 * test("shows a seeded conversation", async ({ page }) => {
 *   await page.goto("/");
 *   await clearThreads(page, { dbName: "my-app" });
 *   await seedThread(page, "fixtures/support-chat.lgthread", { dbName: "my-app", threadId: "t1" });
 *   await page.reload();
 *   await page.getByTestId("composer").fill("thanks!");
 *   await page.getByTestId("send").click();
 *   await expect.poll(async () => (await readThreadState(page, "t1", { dbName: "my-app" }))?.values.messages).toHaveLength(6);
 * });
 * ```
 * @module
 */
import type { Page } from "playwright";
import type { PageApi, PageThreadState, SeededThread } from "./playwright/page.js";
import type { IfThreadExists } from "./portable/index.js";
import { toBase64 } from "./core/bytes.js";

export type { PageThreadState, SeededThread } from "./playwright/page.js";

/** The global the injected script defines (see `playwright/page.ts`). */
const PAGE_API_KEY = "__langgraphIndexedDBPlaywright_v1";

/** The prebuilt script's file name, next to this module in `dist/`. */
export const PAGE_BUNDLE_FILE = "playwright-page.iife.js";

/** Which database: the `dbName` the app gives its `IndexedDBSaver`. */
export interface PageDatabaseOptions {
  /** Default `"langgraph"`, IndexedDBSaver's default. */
  dbName?: string;
}

/** Options of {@link seedThread}. */
export interface SeedThreadOptions extends PageDatabaseOptions {
  /** Seed under this thread id instead of the file's. */
  threadId?: string;
  /** When the thread already exists in the page: `"error"` (default), `"replace"` or `"merge"`. */
  ifExists?: IfThreadExists;
}

/** Options of {@link readThreadState}. */
export interface ReadThreadStateOptions extends PageDatabaseOptions {
  /** Read a subgraph's namespace instead of the root graph (`""`). */
  checkpointNs?: string;
  /** Keep LangGraph's internal channels (`__start__`, `branch:to:…`). Default false. */
  internal?: boolean;
  /**
   * Channels to rebuild from their write history when absent from the
   * checkpoint. Delta channels are found by themselves (the loop's
   * `counters_since_delta_snapshot`, or a `DeltaSnapshot` seed); name them here
   * if a thread has none of those yet.
   */
  deltaChannels?: string[];
}

/** Options of {@link clearThreads}. */
export interface ClearThreadsOptions extends PageDatabaseOptions {
  /** Only these threads. Default: every thread in the database. */
  threadIds?: string[];
  /**
   * Delete the whole database instead (`indexedDB.deleteDatabase`); the app's
   * open connection must close on `versionchange`, as IndexedDBSaver's does.
   */
  deleteDatabase?: boolean;
}

/** An exported thread, or the path of a file holding one. */
export type ThreadFileInput = Uint8Array | ArrayBuffer | Blob | string;

/**
 * Imports an exported thread (from `exportThread`, or a saved `.lgthread`
 * file) into the page's IndexedDBSaver database.
 *
 * @param page A Playwright page at the app's origin.
 * @param file The export as bytes or a Blob, or a file path.
 * @returns The thread id written and the counts.
 */
export async function seedThread(
  page: Page,
  file: ThreadFileInput,
  options: SeedThreadOptions = {},
): Promise<SeededThread> {
  const bytes = await fileBytes(file);
  const api = await ensurePageApi(page);
  return inPage(page, "seedThread", () =>
    page.evaluate(
      async ([key, base64, opts]) => (globalThis as unknown as Record<string, PageApi>)[key]!.seed(base64, opts),
      [
        api,
        toBase64(bytes),
        { dbName: options.dbName ?? "langgraph", threadId: options.threadId, ifExists: options.ifExists },
      ] as const,
    ),
  );
}

/**
 * The latest checkpoint of a thread in the page, as JSON-able data: channel
 * values (delta channels rebuilt), metadata, pending writes; or `undefined`
 * when the thread has no checkpoint there. A database the page does not have
 * is an error that lists the ones it has (a wrong `dbName`), not an empty answer.
 */
export async function readThreadState(
  page: Page,
  threadId: string,
  options: ReadThreadStateOptions = {},
): Promise<PageThreadState | undefined> {
  const api = await ensurePageApi(page);
  const state = await inPage(page, "readThreadState", () =>
    page.evaluate(async ([key, id, opts]) => (globalThis as unknown as Record<string, PageApi>)[key]!.read(id, opts), [
      api,
      threadId,
      {
        dbName: options.dbName ?? "langgraph",
        checkpointNs: options.checkpointNs,
        internal: options.internal,
        deltaChannels: options.deltaChannels,
      },
    ] as const),
  );
  return state ?? undefined;
}

/**
 * Deletes threads from the page's database (every thread by default), or the
 * whole database with `deleteDatabase: true`. A database the page does not
 * have is an error that lists the ones it has.
 *
 * @returns The thread ids deleted (empty when the database was deleted).
 */
export async function clearThreads(page: Page, options: ClearThreadsOptions = {}): Promise<string[]> {
  const api = await ensurePageApi(page);
  return inPage(page, "clearThreads", () =>
    page.evaluate(async ([key, opts]) => (globalThis as unknown as Record<string, PageApi>)[key]!.clear(opts), [
      api,
      { dbName: options.dbName ?? "langgraph", threadIds: options.threadIds, deleteDatabase: options.deleteDatabase },
    ] as const),
  );
}

/**
 * Runs `evaluate` and explains the failure every first use hits: a page that
 * has not navigated anywhere (about:blank) or an opaque origin has no
 * IndexedDB, and the browser only says SecurityError.
 */
async function inPage<T>(page: Page, helper: string, evaluate: () => Promise<T>): Promise<T> {
  try {
    return await evaluate();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/SecurityError|access to the Indexed Database API is denied|IndexedDB is not available/i.test(message)) {
      throw new Error(
        `langgraph-checkpoint-indexeddb/playwright: ${helper} needs the page at your app's origin, where its IndexedDB lives, and the page is at ${JSON.stringify(page.url())}. Navigate there first, e.g. await page.goto("http://localhost:5173/").`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Injects the page script unless this document already has it; returns the global's name. */
async function ensurePageApi(page: Page): Promise<string> {
  const present = await page.evaluate(
    (key) => typeof (globalThis as Record<string, unknown>)[key] === "object",
    PAGE_API_KEY,
  );
  if (!present) {
    const script = await pageBundle();
    await page.evaluate(`(() => {\n${script}\n})()`);
  }
  return PAGE_API_KEY;
}

/** The file's bytes (a path is read from disk). */
async function fileBytes(file: ThreadFileInput): Promise<Uint8Array> {
  if (typeof file === "string") {
    const fs = (await import("node:fs/promises" as string)) as { readFile(path: string): Promise<Uint8Array> };
    return new Uint8Array(await fs.readFile(file));
  }
  if (file instanceof Uint8Array) return file;
  if (file instanceof ArrayBuffer) return new Uint8Array(file);
  return new Uint8Array(await file.arrayBuffer());
}

let bundle: Promise<string> | undefined;

/**
 * The script injected into pages: the prebuilt `dist/playwright-page.iife.js`
 * of the installed package, or (running from the sources, as this
 * repository's tests do) built on first use with Vite and cached.
 */
export function pageBundle(): Promise<string> {
  bundle ??= loadBundle().catch((error: unknown) => {
    bundle = undefined;
    throw error;
  });
  return bundle;
}

/** The prebuilt script, else a fresh build. */
async function loadBundle(): Promise<string> {
  const fs = (await import("node:fs/promises" as string)) as { readFile(path: URL, encoding: "utf8"): Promise<string> };
  try {
    return await fs.readFile(new URL(`./${PAGE_BUNDLE_FILE}`, import.meta.url), "utf8");
  } catch {
    return buildPageBundle();
  }
}

/** The part of Vite's `build()` result used here. */
interface ViteBuildOutput {
  output: { type: string; code?: string }[];
}

/**
 * Builds the page script with Vite: `playwright-page` and everything it
 * imports, as one minified IIFE that installs the page API. Used by the
 * package build (`scripts/build-playwright-bundle.mjs`) and, when no prebuilt
 * script exists, at first use.
 */
export async function buildPageBundle(): Promise<string> {
  let vite: { build(config: Record<string, unknown>): Promise<unknown> };
  try {
    vite = (await import("vite" as string)) as typeof vite;
  } catch (error) {
    throw new Error(
      `langgraph-checkpoint-indexeddb/playwright: the prebuilt ${PAGE_BUNDLE_FILE} is missing and Vite is not installed to build it. Reinstall the package, or install vite.`,
      { cause: error },
    );
  }
  const fs = (await import("node:fs/promises" as string)) as { access(path: URL): Promise<void> };
  const sourceUrl = new URL("./playwright/page.ts", import.meta.url);
  const page = await fs.access(sourceUrl).then(
    () => sourceUrl,
    () => new URL("./playwright/page.js", import.meta.url),
  );
  const pagePath = decodeURIComponent(page.pathname);
  // A virtual entry that installs the API; lib mode hands it over as a path under the root.
  const entryName = "langgraph-indexeddb-playwright-entry.js";
  const entryId = `\0${entryName}`;
  const result = await vite.build({
    configFile: false,
    logLevel: "silent",
    mode: "production",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    plugins: [
      {
        name: "langgraph-indexeddb-playwright-entry",
        resolveId: (id: string) => (id.endsWith(entryName) ? entryId : undefined),
        load: (id: string) =>
          id === entryId
            ? `import { installPageApi } from ${JSON.stringify(pagePath)};\ninstallPageApi();\n`
            : undefined,
      },
    ],
    build: {
      write: false,
      target: "es2022",
      minify: true,
      // Errors keep their class names (DecryptionError, ThreadImportError…) in the page and in Playwright's report.
      rolldownOptions: { output: { keepNames: true } },
      sourcemap: false,
      copyPublicDir: false,
      reportCompressedSize: false,
      lib: {
        entry: entryName,
        formats: ["iife"],
        name: "LanggraphIndexedDBPlaywright",
        fileName: () => PAGE_BUNDLE_FILE,
      },
    },
  });
  const outputs = (Array.isArray(result) ? result : [result]) as ViteBuildOutput[];
  const chunk = outputs
    .flatMap((output) => output.output)
    .find((item) => item.type === "chunk" && typeof item.code === "string");
  if (!chunk?.code) throw new Error("langgraph-checkpoint-indexeddb/playwright: the Vite build produced no script.");
  return chunk.code;
}
