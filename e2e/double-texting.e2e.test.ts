/**
 * Two tabs sending on one thread at the same moment (issue: "one run per
 * thread"): the runs take the thread's Web Lock in turn (runOnThread,
 * "enqueue"), so every message is answered once, in one line of history,
 * and the tab that waits says that the other one is replying.
 */
import type { Page } from "playwright";
import { expect, test } from "vitest";
import { runLockName } from "../src/runs/locks.js";
import { type Harness, ready, screenshot, send, submit, transcript, useHarness } from "./support.js";

// A tab's message meets another tab's run still in progress: the model's pace. Tab A of each test is a
// fresh thread of one kept page (one boot for the file, not one per test), but in the test whose timers
// run on its clock (a clock is the whole context's): it has a context of its own.
const harness = useHarness({ pace: "model", keepPage: true });
const own = useHarness({ pace: "model" });

/** Tab A, a new page of `h`, and tab B, one more, on one thread that has an opening turn, both showing it. */
async function twoTabs(h: Harness, a: Page): Promise<[Page, Page]> {
  await ready(a);
  await send(a, "opening message");
  const b = await h.page(new URL(a.url()).hash);
  await ready(b);
  await expect.poll(() => transcript(b)).toHaveLength(2);
  return [a, b];
}

test("two tabs send 5 messages each at once on one thread: every message answered once, one branch", async () => {
  const [a, b] = await twoTabs(harness(), await harness().thread());

  const sent: string[] = [];
  let sawBusy = false;
  const watchBusy = (async () => {
    // While A answers, B shows that another tab is replying (and the other way round).
    const deadline = Date.now() + 60_000;
    while (!sawBusy && Date.now() < deadline) {
      sawBusy =
        (await a.getByTestId("busy-elsewhere").isVisible()) || (await b.getByTestId("busy-elsewhere").isVisible());
      if (sawBusy) await screenshot((await b.getByTestId("busy-elsewhere").isVisible()) ? b : a, "busy-elsewhere");
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  await Promise.all(
    [a, b].map(async (page, tab) => {
      for (let i = 1; i <= 5; i++) {
        const text = `tab ${tab === 0 ? "A" : "B"} message ${i}`;
        sent.push(text);
        await submit(page, text);
      }
    }),
  );
  await watchBusy;
  expect(sawBusy).toBe(true);

  // Both tabs end on the same history: the opening turn and ten more, each answered once.
  const expected = 2 + 2 * 10;
  await expect.poll(() => transcript(a), { timeout: 120_000, interval: 250 }).toHaveLength(expected);
  await expect.poll(() => transcript(b), { timeout: 30_000, interval: 250 }).toEqual(await transcript(a));
  const lines = await transcript(a);
  const users = lines.filter((line) => line.startsWith("user: ")).map((line) => line.slice("user: ".length));
  expect(users.slice(1).sort()).toEqual([...sent].sort());
  // One line of history: user and assistant alternate, nothing lost in a hidden sibling branch.
  lines.forEach((line, i) => expect(line.startsWith(i % 2 === 0 ? "user: " : "assistant: ")).toBe(true));
  // Each tab's own messages keep their order.
  for (const tab of ["A", "B"]) {
    const own = users.filter((text) => text.startsWith(`tab ${tab} `));
    expect(own).toEqual([1, 2, 3, 4, 5].map((i) => `tab ${tab} message ${i}`));
  }
  await expect.poll(() => b.getByTestId("busy-elsewhere").isVisible()).toBe(false);
}, 180_000);

test("while another tab answers, this tab does not call that turn cut short (nor offer Retry)", async () => {
  // A answers at the slow pace (about 9 s for this question): B's checks all fall inside A's answer.
  // The tabs' timers run on a clock that flows as real time does until the checks are done; then it
  // skips the rest of A's answer (seconds of waiting that prove nothing) instead of waiting it out.
  await own().context.clock.install();
  const [a, b] = await twoTabs(own(), await own().page("", { pace: "slow" }));
  // A long answer in A: B sees the question land and the thread busy elsewhere.
  const question = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(" ");
  await submit(a, question);
  await b.getByTestId("busy-elsewhere").waitFor();
  await expect.poll(() => transcript(b)).toHaveLength(3);
  // B knows the turn is being answered elsewhere: no "cut short", no Retry (it would answer it twice)…
  await expect.poll(() => b.getByTestId("turn-status").count()).toBe(0);
  // …and that is while A still streams.
  expect(await a.getByTestId("stop").isVisible()).toBe(true);
  await screenshot(b, "answering-elsewhere");
  // Once A is done, B shows the answer, with no problem either.
  await a.clock.runFor("00:10");
  await expect.poll(() => transcript(b), { timeout: 30_000 }).toHaveLength(4);
  await expect.poll(() => b.getByTestId("busy-elsewhere").isVisible()).toBe(false);
  expect(await b.getByTestId("turn-status").count()).toBe(0);
});

/**
 * Tab A with an opening turn, holding the thread's run lock as its run would until `releaseRunLock()`
 * in A: how long another tab waits is then up to the test, not to a race with the model's pace.
 */
async function heldThread(): Promise<Page> {
  const a = await harness().thread();
  await send(a, "opening message");
  const threadId = decodeURIComponent(new URL(a.url()).hash.replace("#/thread/", ""));
  await a.evaluate(
    async (name) => {
      await new Promise<void>((held) => {
        void navigator.locks.request(
          name,
          () =>
            new Promise<void>((release) => {
              Object.assign(window, { releaseRunLock: release });
              held();
            }),
        );
      });
    },
    runLockName("demo-checkpoints", threadId),
  );
  return a;
}

/** Lets go of the run lock {@link heldThread} holds in tab `a`. */
const releaseRunLock = (a: Page) =>
  a.evaluate(() => (window as unknown as { releaseRunLock: () => void }).releaseRunLock());

test("Stop on a message still waiting for another tab's answer gives it back, unsent", async () => {
  const a = await heldThread();
  // B opens the thread while it is held, and finds it busy in another tab.
  const b = await harness().page(new URL(a.url()).hash);
  await ready(b);
  await expect.poll(() => transcript(b)).toHaveLength(2);
  await b.getByTestId("busy-elsewhere").waitFor();
  await submit(b, "waiting in tab B");
  await b.getByTestId("stop").waitFor();
  // Waiting is not thinking: the banner says another tab is answering, and only it.
  expect(await b.getByTestId("thinking").count()).toBe(0);
  expect(await b.getByTestId("busy-elsewhere").isVisible()).toBe(true);
  await b.getByTestId("stop").click();
  // Nothing of it was sent: the text is back in B's composer, to send later or drop.
  await expect.poll(() => b.getByTestId("composer").inputValue()).toBe("waiting in tab B");
  await releaseRunLock(a);
  await expect.poll(() => b.getByTestId("busy-elsewhere").isVisible()).toBe(false);
  // The stopped message never ran, not even once the thread was free.
  expect(await transcript(b)).toEqual(await transcript(a));
  expect(await transcript(b)).toHaveLength(2);
  expect((await transcript(b)).join("\n")).not.toContain("waiting in tab B");
  expect(await b.getByTestId("turn-status").count()).toBe(0);
});

/** Tab B on tab A's held thread (see {@link heldThread}), its first message edited to `text`, waiting. */
async function editWhileHeld(a: Page, text: string): Promise<{ b: Page; before: string[] }> {
  const b = await harness().page(new URL(a.url()).hash);
  await ready(b);
  await expect.poll(() => transcript(b)).toHaveLength(2);
  const before = await transcript(b);
  await b.getByTestId("busy-elsewhere").waitFor();
  await b.getByTestId("edit").first().click();
  await b.getByTestId("edit-text").fill(text);
  await b.getByTestId("edit-save").click();
  // Waiting: the edited message reads as it will, marked pending; the answer to the old one is gone.
  await expect.poll(() => transcript(b)).toEqual([`user: ${text}`]);
  expect(await b.locator('.message.user.draft[data-testid="message"]').count()).toBe(1);
  return { b, before };
}

test("an edit waiting for another tab's answer shows at once, pending, and runs once the thread is free", async () => {
  const a = await heldThread();
  const { b } = await editWhileHeld(a, "opening message, edited in B");
  await b.getByTestId("stop").waitFor();
  await screenshot(b, "edit-waiting");
  await releaseRunLock(a);
  await expect.poll(() => transcript(b)).toHaveLength(2);
  expect((await transcript(b))[0]).toBe("user: opening message, edited in B");
  expect(await b.locator(".message.draft").count()).toBe(0);
});

test("Stop on an edit still waiting for another tab's answer puts the conversation back as it was", async () => {
  const a = await heldThread();
  const { b, before } = await editWhileHeld(a, "an edit given up");
  await b.getByTestId("stop").click();
  await expect.poll(() => transcript(b)).toEqual(before);
  expect(await b.locator(".message.draft").count()).toBe(0);
  await releaseRunLock(a);
  await expect.poll(() => b.getByTestId("busy-elsewhere").isVisible()).toBe(false);
  expect(await transcript(b)).toEqual(before);
});
