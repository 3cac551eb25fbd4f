/**
 * runOnThread across real browsing contexts of one origin (Chromium; Firefox
 * through vitest.firefox.config.ts): two same-origin iframes (each its own
 * document, realm, IndexedDB connections and Web Locks client, as two tabs
 * are), and this page plus a dedicated worker. Each strategy gets two sends
 * at once; the thread is counted afterwards (test/support/runs/verify.ts). Then a
 * tab closed mid-run: removing its iframe destroys its document, the browser
 * releases its lock, and another frame sees the thread free and resumes the
 * cut-off run. That test closes the second tab of the pair, so it comes last.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { byDepth } from "../../test/support/depth.js";
import { IndexedDBSaver } from "../saver/index.js";
import { isThreadRunning, watchThreadRunning, type MultitaskStrategy } from "./coordinator.js";
import { deleteDatabase, freshDbName } from "../../test/support/databases.js";
import { DELAY_MS, historyReport, seed, send, threadState, type Outcome } from "../../test/support/runs/scenario.js";
import { verifyTwoSends } from "../../test/support/runs/verify.js";
import type { RunsTabApi } from "../../test/support/runs/run-page.js";
import { openIframeTab, type IframeTab } from "../../test/support/iframe-tab.js";

const PAGE_MODULE = new URL("../../test/support/runs/run-page.ts", import.meta.url).href;
const STRATEGIES: MultitaskStrategy[] = ["reject", "enqueue", "interrupt", "rollback"];

type Tab = IframeTab<RunsTabApi>;

/** A same-origin iframe that loads the page module (20 s a tab opened at once with it). */
const openTab = (atOnce: number): Promise<Tab> => openIframeTab<RunsTabApi>(PAGE_MODULE, "runsTab", atOnce * 20_000);

/**
 * Two tabs and a worker, loaded once and shared by the tests (each uses a
 * fresh database). "A tab closed mid-run", the last test, closes the second
 * tab rather than a third of its own: a tab loads the whole library into its
 * own realm, about 3 CPU-s in Firefox (where these loads were most of the
 * file's time), and the first tab, which resumes the run, still never touched
 * that test's database.
 */
let pair: [Tab, Tab];
let shared: ReturnType<typeof startWorker>;
const savers: IndexedDBSaver[] = [];
const names = new Set<string>();

beforeAll(async () => {
  pair = (await Promise.all([openTab(2), openTab(2)])) as [Tab, Tab];
  shared = startWorker();
}, 40_000);

afterAll(() => {
  for (const tab of pair) tab.frame.remove();
  shared.terminate();
});

afterEach(async () => {
  await Promise.all(savers.splice(0).map((saver) => saver.close()));
  await Promise.all([...names].map((name) => deleteDatabase(name)));
  names.clear();
});

/** A saver of this page on a fresh database, with one seed turn on thread "t". */
async function seeded(prefix: string) {
  const dbName = freshDbName(prefix);
  names.add(dbName);
  const saver = new IndexedDBSaver({ dbName });
  savers.push(saver);
  await seed(saver, "t", "hello");
  return { dbName, saver, seedCheckpoints: (await historyReport(saver, "t")).checkpoints };
}

function startWorker() {
  const w = new Worker(new URL("../../test/support/runs/run-worker.ts", import.meta.url), { type: "module" });
  let next = 0;
  const pending = new Map<number, (reply: { outcome: Outcome; hasLocks: boolean }) => void>();
  w.onmessage = (event: MessageEvent<{ id: number; outcome: Outcome; hasLocks: boolean }>) =>
    pending.get(event.data.id)?.(event.data);
  const ask = (request: object) =>
    new Promise<{ outcome: Outcome; hasLocks: boolean }>((resolve) => {
      const id = ++next;
      pending.set(id, resolve);
      w.postMessage({ id, threadId: "t", ...request });
    });
  return {
    /** Loads the worker's modules and opens its saver, so that a send starts at once. */
    ready: (dbName: string) => ask({ dbName, ping: true }),
    send: (dbName: string, text: string, strategy: MultitaskStrategy) =>
      ask({ dbName, text, strategy, delayMs: DELAY_MS[strategy], answerAfterStop: true }),
    terminate: () => w.terminate(),
  };
}

describe("two pages of one origin send on one thread at once", () => {
  for (const strategy of STRATEGIES) {
    it(`"${strategy}"`, async () => {
      const { dbName, saver, seedCheckpoints } = await seeded(`runs-tabs-${strategy}`);
      const [a, b] = await Promise.all(
        pair.map(
          async (tab, i) =>
            JSON.parse(await tab.api.send(dbName, "t", `from tab ${i}`, strategy, DELAY_MS[strategy], true)) as Outcome,
        ),
      );
      await verifyTwoSends(strategy, a!, b!, saver, "t", "hello", seedCheckpoints);
    });
  }
});

/**
 * Sends from each page in the measurement: five (ten queued at once) at
 * the full depth; three at the fast depth, still six runs queued across two
 * pages, each on the one before's answer, in two fifths less of Firefox's time.
 */
const SENDS_PER_PAGE = byDepth(3, 5);

describe("the issue's measurement, on runOnThread", () => {
  it(`${SENDS_PER_PAGE} sends from each of two pages at once, "enqueue": all answered, one chain`, async () => {
    const { dbName, saver, seedCheckpoints } = await seeded("runs-ten");
    const texts = pair.flatMap((_, i) => Array.from({ length: SENDS_PER_PAGE }, (_, j) => `tab ${i} message ${j}`));
    const outcomes = await Promise.all(
      texts.map(
        async (text, k) =>
          JSON.parse(await pair[k < SENDS_PER_PAGE ? 0 : 1].api.send(dbName, "t", text, "enqueue", 20)) as Outcome,
      ),
    );
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    const { messages, next } = await threadState(saver, "t");
    expect(next).toEqual([]);
    expect(messages).toHaveLength(2 + 2 * texts.length);
    // Each user message is followed by its own answer.
    for (let i = 2; i < messages.length; i += 2) {
      expect(messages[i]![0]).toBe("human");
      expect(messages[i + 1]).toEqual(["ai", `echo ${messages[i]![1]} (#${i + 1})`]);
    }
    expect(
      messages
        .filter(([role]) => role === "human")
        .map(([, text]) => text)
        .slice(1)
        .sort(),
    ).toEqual([...texts].sort());
    const history = await historyReport(saver, "t");
    expect(history.problem).toBeUndefined();
    expect(history.runIds).toHaveLength(texts.length);
    expect(history.checkpoints).toBe(seedCheckpoints + 3 * texts.length);
  });
});

describe("a page and a dedicated worker send on one thread at once", () => {
  for (const strategy of STRATEGIES) {
    it(`"${strategy}"`, async () => {
      const { dbName, saver, seedCheckpoints } = await seeded(`runs-worker-${strategy}`);
      const inWorker = shared;
      await inWorker.ready(dbName);
      const [fromWorker, fromPage] = await Promise.all([
        inWorker.send(dbName, "from the worker", strategy),
        send(saver, "t", "from the page", strategy, DELAY_MS[strategy], false, true),
      ]);
      expect(fromWorker.hasLocks).toBe(true);
      await verifyTwoSends(strategy, fromWorker.outcome, fromPage, saver, "t", "hello", seedCheckpoints);
    });
  }
});

describe("a tab closed mid-run", () => {
  it("releases the thread; the cut-off run shows its `next` task and another frame resumes it", async () => {
    const { dbName, saver } = await seeded("runs-closed");
    const [resumer, closing] = pair;
    const seen: boolean[] = [];
    const unwatch = watchThreadRunning("t", { dbName, pollMs: 100 }, (running) => seen.push(running));
    await expect.poll(() => seen).toEqual([false]);
    // A model that would think for a minute: the tab is closed long before.
    void closing.api.send(dbName, "t", "cut off", "reject", 60_000);
    await expect.poll(async () => (await threadState(saver, "t")).next, { timeout: 20_000 }).toEqual(["agent"]);
    expect(await isThreadRunning("t", { dbName })).toBe(true);
    await expect.poll(() => seen).toEqual([false, true]);

    closing.frame.remove();
    await expect.poll(() => isThreadRunning("t", { dbName }), { timeout: 20_000 }).toBe(false);
    await expect.poll(() => seen, { timeout: 5_000 }).toEqual([false, true, false]);
    unwatch();
    // Visible as cut off: the user's message is in, its answer is not.
    expect(await threadState(saver, "t")).toEqual({
      messages: [
        ["human", "hello"],
        ["ai", "echo hello (#1)"],
        ["human", "cut off"],
      ],
      next: ["agent"],
    });

    // Another frame, the pair's first: it never sent on this database.
    expect(JSON.parse(await resumer.api.resume(dbName, "t"))).toEqual({ ok: true });
    expect(await threadState(saver, "t")).toEqual({
      messages: [
        ["human", "hello"],
        ["ai", "echo hello (#1)"],
        ["human", "cut off"],
        ["ai", "echo cut off (#3)"],
      ],
      next: [],
    });
    expect((await historyReport(saver, "t")).problem).toBeUndefined();
  });
});
