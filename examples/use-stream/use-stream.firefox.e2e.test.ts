/**
 * The useStream example in Debian's firefox-esr, driven by puppeteer-core
 * over WebDriver BiDi (Playwright drives only its own patched Firefox): tokens
 * stream, an approval asked through `interruptWith` is answered after a
 * reload, a reload mid-answer shows the run cut short, two tabs double-text
 * one thread with `enqueue`, and with the network off after the first load
 * the app reloads and answers. The edit-and-branches case is Chromium's only
 * (use-stream.e2e.test.ts).
 * Runs at the full depth only (`npm run test:full`); see vitest.config.ts.
 */
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { messagesOnScreen, networkIsOff, streamingPart, takeExpected } from "./pages.js";

let browser: Browser;
const errors: string[] = [];

beforeAll(async () => {
  browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr",
    headless: true,
  });
});

afterAll(async () => {
  await browser?.close();
  expect(errors).toEqual([]);
});

/** A new tab on the example, with the answer's pace (milliseconds a character) and a thread, if given. */
async function tab(pace: number, thread?: string): Promise<Page> {
  const page = await browser.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`pageerror: ${String(error)}`));
  const url = new URL(inject("baseURL"));
  url.searchParams.set("pace", String(pace));
  if (thread !== undefined) url.searchParams.set("thread", thread);
  await page.goto(url.href);
  await page.waitForSelector("[data-testid=composer]");
  return page;
}

async function submit(page: Page, text: string): Promise<void> {
  await page.type("[data-testid=composer]", text);
  await page.keyboard.press("Enter");
}

/** The messages on screen, as `type: text`. */
function transcript(page: Page): Promise<string[]> {
  return page.$$eval("[data-testid=message]", messagesOnScreen);
}

/** Waits until the last answer on screen is a strict, non-empty prefix of `full`: the answer is streaming. */
async function streamingPartOf(page: Page, full: string): Promise<void> {
  await page.waitForFunction(streamingPart, { polling: "raf" }, full);
}

const text = (page: Page, selector: string) => page.$eval(selector, (node) => node.textContent ?? "").catch(() => "");

it("streams tokens, and answers an approval after a reload", async () => {
  const page = await tab(15);
  await submit(page, "hello fox");
  await streamingPartOf(page, "echo hello fox");
  await expect.poll(() => transcript(page)).toEqual(["human: hello fox", "ai: echo hello fox"]);
  await expect.poll(() => text(page, "[data-testid=status]")).toContain("idle");
  await submit(page, "approve: send it?");
  await page.waitForSelector("[data-testid=approval]");
  await expect.poll(() => text(page, "[data-testid=status]")).toContain("idle");
  await page.reload();
  await page.waitForSelector("[data-testid=approval]");
  await page.click("[data-testid=approval] button");
  await expect
    .poll(async () => (await transcript(page)).slice(2))
    .toEqual(["human: approve: send it?", "ai: approved: yes"]);
  await page.close();
});

it("shows a run cut short by a reload mid-answer", async () => {
  const page = await tab(40);
  const long = "a message long enough that its echo streams for seconds";
  await submit(page, long);
  await streamingPartOf(page, `echo ${long}`);
  await page.reload();
  await expect.poll(() => text(page, "[data-testid=error]")).toContain("RunLostError");
  // useStream logs the error it shows (over BiDi, as a handle): expected here, and only here.
  takeExpected(errors, (error) => error === "console: JSHandle@error" || error.includes("RunLostError"));
  await page.close();
});

it("double-texts one thread from two tabs with enqueue", async () => {
  const first = await tab(30);
  const long = "first, a message whose answer takes a while";
  await submit(first, long);
  await streamingPartOf(first, `echo ${long}`);
  // Pace 0 for the second: its run goes on while its tab is in the background, where Firefox clamps
  // every timer to a second.
  const second = await tab(0, new URL(first.url()).searchParams.get("thread")!);
  await submit(second, "second");
  // The first tab's run goes on in the front tab.
  await first.bringToFront();
  await expect
    .poll(() => transcript(second))
    .toEqual([`human: ${long}`, `ai: echo ${long}`, "human: second", "ai: echo second"]);
  await first.close();
  await second.close();
});

it("loads and answers with the network off after the first load", async () => {
  const page = await tab(0);
  // The service worker has precached the build and controls the page (clientsClaim).
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  await page.setOfflineMode(true);
  // The network is off indeed: a request the service worker has not precached fails.
  expect(await page.evaluate(networkIsOff)).toBe(true);
  await page.reload();
  await page.waitForSelector("[data-testid=composer]");
  await submit(page, "offline?");
  await expect.poll(async () => (await transcript(page)).slice(-2)).toEqual(["human: offline?", "ai: echo offline?"]);
  await page.close();
});
