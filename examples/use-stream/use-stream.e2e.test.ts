/**
 * The useStream example in Chromium: `useStream` from the LangGraph SDK
 * against `createLocalAgentServer` in the page, on IndexedDB. Tokens stream;
 * the history gives a branch to switch to after an edit; an approval asked
 * through `interruptWith` is answered after a reload; a reload mid-answer
 * shows the run cut short; the thread list follows a run and its Stop, an
 * answer is regenerated, a thread copied; in a shared worker, a reload
 * mid-answer rejoins the run; two tabs double-text one thread with `enqueue`;
 * and with the network off after the first load the app still loads and
 * answers. One browser; one context for the tests that can share it (each
 * opens its own thread).
 */
import { readFileSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { chromiumArgs, chromiumPath } from "../../test/support/chromium.js";
import { messagesOnScreen, networkIsOff, streamingPart, takeExpected } from "./pages.js";

let browser: Browser;
let context: BrowserContext;
const errors: string[] = [];

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
  context = await open({ serviceWorkers: "block" });
});

afterAll(async () => {
  await browser?.close();
  expect(errors).toEqual([]);
});

/** A context whose pages' console errors and uncaught exceptions are recorded. */
async function open(options: { serviceWorkers: "allow" | "block" }): Promise<BrowserContext> {
  const opened = await browser.newContext(options);
  opened.setDefaultTimeout(30_000);
  opened.on("page", (page) => {
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  });
  return opened;
}

/**
 * A new tab on the example, with the answer's pace (milliseconds a character), a thread, if given, and
 * where the server runs (the page by default, or a `worker` or `shared` worker).
 */
async function tab(into: BrowserContext, pace: number, thread?: string, server?: "worker" | "shared"): Promise<Page> {
  const page = await into.newPage();
  const url = new URL(inject("baseURL"));
  url.searchParams.set("pace", String(pace));
  if (thread !== undefined) url.searchParams.set("thread", thread);
  if (server !== undefined) url.searchParams.set("server", server);
  await page.goto(url.href);
  await page.getByTestId("composer").waitFor();
  return page;
}

async function submit(page: Page, text: string): Promise<void> {
  await page.getByTestId("composer").fill(text);
  await page.getByTestId("composer").press("Enter");
}

/** The messages on screen, as `type: text`. */
function transcript(page: Page): Promise<string[]> {
  return page.getByTestId("message").evaluateAll(messagesOnScreen);
}

/** Waits until the last answer on screen is a strict, non-empty prefix of `full`: the answer is streaming. */
async function streamingPartOf(page: Page, full: string): Promise<string> {
  const handle = await page.waitForFunction(streamingPart, full, { polling: "raf" });
  return (await handle.jsonValue()) as string;
}

/** The thread the page shows, from its address. */
function threadOf(page: Page): string {
  const thread = new URL(page.url()).searchParams.get("thread");
  expect(thread).toBeTruthy();
  return thread!;
}

/** Waits until `locator`'s text contains `text`. */
const shows = (locator: Locator, text: string) => expect.poll(() => locator.first().textContent()).toContain(text);

const idle = (page: Page) => shows(page.getByTestId("status"), "idle");

/** The status the thread list shows for `thread`. */
const listedStatus = (page: Page, thread: string) =>
  page.locator(`[data-testid=thread][data-thread="${thread}"]`).getAttribute("data-status", { timeout: 1_000 });

describe("useStream on the in-page Agent Server", () => {
  it("streams tokens, keeps history, forks on an edit and switches branches", async () => {
    // 60 ms a character: the 16-character answer streams for about a second, so a loaded machine's page, whose
    // frames (and so the test's polling) come late, still shows it part-way (at 15 ms it was missed under load).
    const page = await tab(context, 60);
    await submit(page, "hello there");
    const part = await streamingPartOf(page, "echo hello there");
    expect(part.length).toBeLessThan("echo hello there".length);
    await expect.poll(() => transcript(page)).toEqual(["human: hello there", "ai: echo hello there"]);
    await idle(page);

    await page.getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Edited message").fill("bonjour");
    await page.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => transcript(page)).toEqual(["human: bonjour", "ai: echo bonjour"]);
    await shows(page.getByTestId("branches"), "2 / 2");

    await page.getByRole("button", { name: "Previous" }).first().click();
    await expect.poll(() => transcript(page)).toEqual(["human: hello there", "ai: echo hello there"]);
    await shows(page.getByTestId("branches"), "1 / 2");
    // The history survives a reload (IndexedDB), branch for branch.
    await page.reload();
    await shows(page.getByTestId("branches"), "2 / 2");
    await expect.poll(() => transcript(page)).toEqual(["human: bonjour", "ai: echo bonjour"]);
    await page.close();
  });

  it("answers an approval asked through interruptWith after a reload", async () => {
    const page = await tab(context, 0);
    await submit(page, "approve: delete the draft?");
    await shows(page.getByTestId("approval"), "approve: delete the draft?");
    await idle(page);
    await page.reload();
    await shows(page.getByTestId("approval"), "approve: delete the draft?");
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await expect.poll(() => transcript(page)).toEqual(["human: approve: delete the draft?", "ai: approved: yes"]);
    await expect.poll(() => page.getByTestId("approval").count()).toBe(0);
    await page.close();
  });

  it("shows a run cut short by a reload mid-answer, and goes on after it", async () => {
    const page = await tab(context, 40);
    const long = "a message long enough that its echo streams for seconds";
    await submit(page, long);
    await streamingPartOf(page, `echo ${long}`);
    // The run lived in this page: the reload ends it. useStream rejoins it (reconnectOnMount).
    await page.reload();
    await shows(page.getByTestId("error"), "RunLostError");
    // useStream's onError was called with it too.
    expect(await page.getByTestId("errors").textContent()).toBe("RunLostError");
    // useStream logs the error it shows: expected here, and only here.
    takeExpected(errors, (error) => error.startsWith("console: RunLostError"));
    expect((await transcript(page))[0]).toBe(`human: ${long}`);
    await submit(page, "still here?");
    await expect.poll(async () => (await transcript(page)).at(-1)).toBe("ai: echo still here?");
    await page.close();
  });

  it("lists threads as they change; Stop leaves the thread idle; regenerates an answer; copies the thread", async () => {
    const page = await tab(context, 20);
    await submit(page, "list me");
    await expect.poll(() => transcript(page)).toEqual(["human: list me", "ai: echo list me"]);
    const source = threadOf(page);
    await expect.poll(() => listedStatus(page, source)).toBe("idle");

    await page.getByRole("button", { name: "Regenerate" }).click();
    await shows(page.getByTestId("branches"), "2 / 2");
    await expect.poll(() => transcript(page)).toEqual(["human: list me", "ai: echo list me"]);

    const long = "a message whose answer is stopped";
    await submit(page, long);
    await streamingPartOf(page, `echo ${long}`);
    await expect.poll(() => listedStatus(page, source)).toBe("busy");
    await page.getByRole("button", { name: "Stop" }).click();
    await idle(page);
    // Stopped, not waiting for an answer: idle in the list (as the Agent Server has it), no approval asked.
    await expect.poll(() => listedStatus(page, source)).toBe("idle");
    expect(await page.getByTestId("approval").count()).toBe(0);
    expect(await transcript(page)).toEqual(["human: list me", "ai: echo list me", `human: ${long}`]);

    await page.getByRole("button", { name: "Copy thread" }).click();
    await expect.poll(() => threadOf(page)).not.toBe(source);
    const copy = threadOf(page);
    await expect.poll(() => transcript(page)).toEqual(["human: list me", "ai: echo list me", `human: ${long}`]);
    await expect.poll(() => listedStatus(page, copy)).toBe("idle");
    await page.getByRole("button", { name: "list me" }).and(page.locator(":not([aria-current=true])")).click();
    await expect.poll(() => threadOf(page)).toBe(source);
    await page.close();
  });

  it("in a shared worker: a reload mid-answer rejoins the run, which goes on in the worker", async () => {
    // The other tab keeps the shared worker (and the run in it) alive while this one reloads.
    const keeper = await tab(context, 30, undefined, "shared");
    const page = await tab(context, 30, undefined, "shared");
    const long = "a message whose answer outlives a reload";
    await submit(page, long);
    await streamingPartOf(page, `echo ${long}`);
    await page.reload();
    await streamingPartOf(page, `echo ${long}`);
    await expect.poll(() => transcript(page)).toEqual([`human: ${long}`, `ai: echo ${long}`]);
    await idle(page);
    expect(await page.getByTestId("error").count()).toBe(0);
    await keeper.close();
    await page.close();
  });

  it("double-texts one thread from two tabs with enqueue", async () => {
    const first = await tab(context, 30);
    const long = "first, a message whose answer takes a while";
    await submit(first, long);
    await streamingPartOf(first, `echo ${long}`);
    const second = await tab(context, 30, threadOf(first));
    await submit(second, "second");
    await expect
      .poll(() => transcript(second))
      .toEqual([`human: ${long}`, `ai: echo ${long}`, "human: second", "ai: echo second"]);
    await idle(second);
    await first.reload();
    await expect
      .poll(() => transcript(first))
      .toEqual([`human: ${long}`, `ai: echo ${long}`, "human: second", "ai: echo second"]);
    await first.close();
    await second.close();
  });
});

it("loads and answers with the network off after the first load", async () => {
  const offline = await open({ serviceWorkers: "allow" });
  const page = await tab(offline, 0);
  // The service worker has precached the build and controls the page (clientsClaim).
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  await offline.setOffline(true);
  // The network is off indeed: a request the service worker has not precached fails (and Chromium logs it).
  expect(await page.evaluate(networkIsOff)).toBe(true);
  takeExpected(errors, (error) => error.includes("ERR_INTERNET_DISCONNECTED"));
  await page.reload();
  await page.getByTestId("composer").waitFor();
  await submit(page, "offline?");
  await expect.poll(() => transcript(page)).toEqual(["human: offline?", "ai: echo offline?"]);
  await offline.close();
});

it("README: the lines that connect useStream to the local server are the example's", () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.split("### `useStream` and the LangGraph SDK against the graph in the page")[1]!;
  const snippet = /```ts\n([\s\S]*?)```/.exec(section)![1]!;
  const sources = ["src/server.ts", "src/agent.ts", "src/App.tsx"].map((file) =>
    // Prettier may break a call over lines: compared with its whitespace collapsed.
    readFileSync(new URL(file, import.meta.url), "utf8").replace(/\s+/g, " "),
  );
  // Each code line, less its closing parentheses (the example passes more options), is in the example's source.
  const lines = snippet
    .split("\n")
    .map((line) => line.replace(/(^|\s)\/\/.*$/, "").trim())
    .filter((line) => line !== "");
  expect(lines.length).toBe(6);
  // A reader copies it as it is: every class it constructs is imported in it (its `Client` once was not).
  for (const [, name] of snippet.matchAll(/\bnew (\w+)\(/g)) {
    expect(snippet, name).toMatch(new RegExp(`^import \\{[^}]*\\b${name}\\b[^}]*\\} from`, "m"));
  }
  for (const line of lines) {
    const needle = line.replace(/ ?\}?\);$/, "");
    expect(
      sources.some((source) => source.includes(needle)),
      line,
    ).toBe(true);
  }
});
