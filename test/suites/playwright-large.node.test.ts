/**
 * Large threads through the Playwright helpers, in real Chromium: a chat
 * whose messages carry attachments (MBs each) is seeded, exported, snapshot
 * and restored, and no single `page.evaluate` carries more than a bounded
 * piece of it. In one message, a snapshot of two ~50 MB threads crashed the
 * page ("Target page, context or browser has been closed"). At the fast
 * depth the pieces are 512 KiB, so that a 2 MiB thread crosses in five
 * both ways (a send or fetch of one piece, or pieces put back out of order,
 * fails it); the full depth moves 50 MB threads in the real 8 MiB pieces.
 */
import { createServer, type Server } from "node:http";
import { chromium, type Browser, type Page } from "playwright";
import { afterAll, beforeAll, expect, it } from "vitest";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { exportThreadFromPage, readThreadState, seedThread } from "../../src/playwright.js";
import { restoreThreads, snapshotThreads } from "../../src/playwright/threads.js";
import { TRANSFER_CHUNK_BYTES, setTransferChunkBytes } from "../../src/playwright/transfer.js";
import { exportThread, validateThreadExport } from "../../src/portable/index.js";
import { IndexedDBSaver } from "../../src/saver/index.js";
import { chromiumArgs, chromiumPath } from "../support/chromium.js";
import { deleteDatabase, freshDbName } from "../support/databases.js";
import { byDepth } from "../support/depth.js";

/** Each thread's size (MiB): several pieces; at the full depth, the size that crashed the page. */
const THREAD_MB = byDepth(2, 50);
/** The piece size: small at the fast depth, so that small threads cross in several pieces. */
const PIECE = byDepth(512 * 1024, TRANSFER_CHUNK_BYTES);
/** Attachment size: a photo's base64. */
const ATTACHMENT = 1024 * 1024;

let server: Server;
let origin: string;
let browser: Browser;

beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end("<!doctype html><title>app under test</title>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
  setTransferChunkBytes(PIECE);
}, 60_000);

afterAll(async () => {
  setTransferChunkBytes(TRANSFER_CHUNK_BYTES);
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/**
 * Text that does not compress: what an attachment's base64 looks like. The
 * letters' ASCII codes go into one array, decoded once: a million
 * one-character strings joined took seconds of the test's 20.
 */
function attachment(seed: number): string {
  const letters = new TextEncoder().encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
  const out = new Uint8Array(ATTACHMENT);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < ATTACHMENT; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = letters[x >>> 26]!;
  }
  return new TextDecoder().decode(out);
}

/** A thread of one checkpoint per turn, each turn's message with a 1 MiB attachment. */
async function largeThread(threadId: string): Promise<Uint8Array> {
  const saver = new IndexedDBSaver({ dbName: freshDbName("playwright-large") });
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  for (let turn = 0; turn < THREAD_MB; turn++) {
    const message = { type: "human", content: `turn ${turn}`, attachment: attachment(turn) };
    const checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(turn),
      channel_values: { last: message, turns: turn + 1 },
      channel_versions: { last: turn + 1, turns: turn + 1 },
    };
    config = await saver.put(
      config,
      checkpoint,
      { source: "loop", step: turn, parents: {} },
      {
        last: turn + 1,
        turns: turn + 1,
      },
    );
  }
  const file = await exportThread(saver, threadId, { as: "bytes" });
  await saver.close();
  await deleteDatabase(saver.dbName);
  return file;
}

/** What crossed `page.evaluate`: every argument's and result's size (JSON characters), and the page API calls. */
interface Messages {
  sizes: number[];
  calls: string[];
}

/** Records every argument and result that crosses `page.evaluate`. */
function watchMessages(page: Page): Messages {
  const messages: Messages = { sizes: [], calls: [] };
  const evaluate = page.evaluate.bind(page) as (fn: unknown, arg?: unknown) => Promise<unknown>;
  page.evaluate = (async (fn: unknown, arg?: unknown) => {
    // callPage's argument: [the API's key, method, arguments].
    const method = Array.isArray(arg) && typeof arg[1] === "string" ? arg[1] : "";
    if (method) messages.calls.push(method);
    messages.sizes.push(JSON.stringify(arg ?? null).length);
    const result = await evaluate(fn, arg);
    // A state read carries the state itself (here a whole attachment, more than a small piece); files never.
    if (method !== "read") messages.sizes.push(JSON.stringify(result ?? null).length);
    return result;
  }) as Page["evaluate"];
  return messages;
}

/** How many of the calls since `from` were `method`. */
function countCalls(messages: Messages, method: string, from: number): number {
  return messages.calls.slice(from).filter((call) => call === method).length;
}

it(
  "seeds, exports, snapshots and restores two large threads in bounded page.evaluate messages",
  async () => {
    // One thread built, seeded twice: b's own build took seconds and covered nothing more.
    const a = await largeThread("a");
    const pieces = Math.ceil(a.length / PIECE);
    expect(a.length).toBeGreaterThan(THREAD_MB * ATTACHMENT);
    expect(pieces).toBeGreaterThan(2);
    const page = await browser.newPage();
    try {
      await page.goto(origin);
      const messages = watchMessages(page);
      const dbName = "large-app";
      await seedThread(page, a, { dbName });
      expect(countCalls(messages, "stage", 0)).toBe(pieces);
      await seedThread(page, a, { dbName, threadId: "b" });
      let from = messages.calls.length;
      const exported = await exportThreadFromPage(page, "a", { dbName });
      expect(countCalls(messages, "unstage", from)).toBe(Math.ceil(exported.length / PIECE));
      expect(exported.length).toBeGreaterThan(2 * PIECE);
      // Its checksums hold: every piece came back, in its place.
      await validateThreadExport(exported);
      const snapshot = await snapshotThreads(page, { dbName });
      expect([...snapshot.keys()].sort()).toEqual(["a", "b"]);
      await seedThread(page, a, { dbName, threadId: "extra" });
      from = messages.calls.length;
      const restored = await restoreThreads(page, snapshot, { dbName });
      expect(countCalls(messages, "stage", from)).toBe(
        [...snapshot.values()].reduce((sum, file) => sum + Math.ceil(file.length / PIECE), 0),
      );
      expect({ threadIds: restored.threadIds.sort(), deleted: restored.deleted }).toEqual({
        threadIds: ["a", "b"],
        deleted: ["extra"],
      });
      const state = await readThreadState(page, "b", { dbName });
      expect(state?.values.turns).toBe(THREAD_MB);
      expect((state?.values.last as { attachment: string }).attachment).toBe(attachment(THREAD_MB - 1));
      // A piece as base64 is a third larger than its bytes; the rest of a message is small.
      expect(Math.max(...messages.sizes)).toBeLessThan((PIECE * 4) / 3 + 4096);
    } finally {
      await page.close();
    }
  },
  byDepth(30_000, 300_000),
);
