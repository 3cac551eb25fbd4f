/**
 * The open thread's watch of other tabs' runs after this tab changed the
 * lock (h177). The watch was the old session's until the thread was opened
 * again. A lock or its removal moves the data to other databases, and the
 * thread's run lock and "started"/"ended" notices are named after the
 * saver's database: a run of another tab on the new ones went unheard. No
 * "Replying in another tab…", the turn in flight taken for one cut short
 * (Retry, which would answer it twice), and an approval card drawn waiting
 * for such a run's question was not drawn again if that run died first.
 */
import { expect, test } from "vitest";
import { lockWith, ready, send, submit, transcript, unlockWith, useHarness, PASSPHRASE } from "./support.js";

const harness = useHarness({ pace: "fast" });

test("after this tab locked the app, another tab's run on the open thread shows here as replying elsewhere", async () => {
  const a = await harness().page();
  await ready(a);
  await send(a, "opening message");
  // Locked here: this tab goes on, on the encrypted databases, with the thread still open.
  await lockWith(a, PASSPHRASE);
  await a.keyboard.press("Escape");
  const b = await harness().page(new URL(a.url()).hash, { pace: "slow" });
  await unlockWith(b, PASSPHRASE);
  await ready(b);
  await expect.poll(() => transcript(b)).toHaveLength(2);
  // A long answer in B (the slow pace: seconds), watched from A.
  await submit(b, Array.from({ length: 300 }, (_, i) => `w${i}`).join(" "));
  await b.getByTestId("stop").waitFor();
  await a.getByTestId("busy-elsewhere").waitFor({ timeout: 15_000 });
  expect(await b.getByTestId("stop").isVisible()).toBe(true);
  // A knows the turn is being answered elsewhere: no "cut short", no Retry.
  await expect.poll(() => transcript(a)).toHaveLength(3);
  expect(await a.getByTestId("turn-status").count()).toBe(0);
  await b.getByTestId("stop").click();
  await expect.poll(() => a.getByTestId("busy-elsewhere").isVisible()).toBe(false);
});
