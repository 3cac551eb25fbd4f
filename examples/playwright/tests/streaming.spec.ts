/**
 * Why the waits exist: a streaming answer under CPU throttling. Waiting for
 * the thread to be idle passes every run; waiting a fixed time, the time the
 * answer takes unthrottled, reads a thread still streaming at least once.
 * `STREAM_RUNS` runs of each: 50 in `npm run test:full`; `npm test` runs 3
 * of the idle wait only, since 3 sleeps may all happen to be long enough.
 */
import type { Page } from "@playwright/test";
import { langgraphTest as test } from "langgraph-checkpoint-indexeddb/playwright";

const { expect } = test;
const RUNS = Number(process.env.STREAM_RUNS ?? 3);
/** Four words at 40 ms each, and some: what the answer takes without throttling. */
const FIXED_SLEEP_MS = 300;

test.use({ langgraphOptions: { dbName: "example-app" } });
test.setTimeout(60_000 + RUNS * 6_000);

/** Chromium runs the page `rate` times slower (DevTools' CPU throttling). */
async function throttle(page: Page, rate: number): Promise<void> {
  const session = await page.context().newCDPSession(page);
  await session.send("Emulation.setCPUThrottlingRate", { rate });
}

/** Sends `text` and gives the last message the thread holds after `wait`. */
async function exchange(page: Page, text: string, wait: () => Promise<unknown>, read: () => Promise<unknown>) {
  await page.getByTestId("composer").fill(text);
  await page.getByTestId("send").click();
  await wait();
  const messages = (await read()) as { content: string }[] | undefined;
  return messages?.[messages.length - 1]?.content;
}

test(`waitForThreadIdle: ${RUNS} streamed answers in a row under 6x CPU throttling`, async ({ page, langgraph }) => {
  await page.goto("/");
  await throttle(page, 6);
  for (let run = 0; run < RUNS; run++) {
    const last = await exchange(
      page,
      `message ${run}`,
      () => langgraph.waitForIdle("t1", { timeout: 30_000 }),
      async () => (await langgraph.read("t1"))?.values.messages,
    );
    expect(last, `run ${run + 1} of ${RUNS}`).toBe(`You said: message ${run}`);
  }
});

test(`a fixed sleep of ${FIXED_SLEEP_MS} ms reads an unfinished answer at least once in ${RUNS} runs`, async ({
  page,
  langgraph,
}) => {
  test.skip(RUNS < 20, "a proof that a sleep fails needs enough runs (STREAM_RUNS=50 in test:full)");
  await page.goto("/");
  await throttle(page, 6);
  let early = 0;
  for (let run = 0; run < RUNS; run++) {
    const last = await exchange(
      page,
      `message ${run}`,
      () => page.waitForTimeout(FIXED_SLEEP_MS),
      async () => (await langgraph.read("t1"))?.values.messages,
    );
    if (last !== `You said: message ${run}`) early++;
    // Let the run finish before the next message, as the user would.
    await langgraph.waitForIdle("t1", { timeout: 30_000 });
  }
  console.log(`fixed sleep: ${early} of ${RUNS} runs read the thread before the answer was committed`);
  expect(early).toBeGreaterThan(0);
});
