/**
 * Two tabs on one origin: what one tab writes shows up in the other's
 * sidebar (Dexie liveQuery) and open thread (the saver's change feed over a
 * BroadcastChannel), without a reload.
 */
import { expect, test } from "vitest";
import { ready, send, transcript, useHarness, threadAction } from "./support.js";

const harness = useHarness();

test("a message sent in one tab appears live in the other; Back returns to the previous thread; a thread deleted in another tab says so", async () => {
  const a = await harness().page();
  const b = await harness().page();
  await Promise.all([ready(a), ready(b)]);
  expect(await b.getByTestId("thread").count()).toBe(0);

  await send(a, "hello from tab A");
  // B's sidebar lists the new thread.
  const inB = b.getByTestId("thread").filter({ hasText: "hello from tab A" });
  await inB.waitFor();
  await inB.click();
  await expect.poll(() => transcript(b)).toHaveLength(2);
  expect((await transcript(b))[0]).toBe("user: hello from tab A");

  // With the thread open in B, A's next turn streams into B's view.
  await send(a, "second message from A");
  await expect.poll(() => transcript(b)).toHaveLength(4);
  expect((await transcript(b))[2]).toBe("user: second message from A");

  // And the other way round.
  await send(b, "reply from tab B");
  await expect.poll(() => transcript(a)).toHaveLength(6);
  expect((await transcript(a))[4]).toBe("user: reply from tab B");

  // A rename in A shows in B's sidebar.
  await threadAction(a.locator(".thread-item.current"), "Rename");
  await a.getByRole("textbox", { name: "Thread title" }).fill("Renamed in A");
  await a.getByRole("textbox", { name: "Thread title" }).press("Enter");
  await b.getByTestId("thread").filter({ hasText: "Renamed in A" }).waitFor();

  // A rename half typed in B outlives A renaming the thread meanwhile: the input keeps its text and the focus
  // (its row drawn anew lost both, the input's blur saving the half-typed name, and threw in the redraw).
  const title = b.getByRole("textbox", { name: "Thread title" });
  await threadAction(b.locator(".thread-item.current"), "Rename");
  await title.fill("Named in B, half");
  await threadAction(a.locator(".thread-item.current"), "Rename");
  await a.getByRole("textbox", { name: "Thread title" }).fill("Renamed again in A");
  await a.getByRole("textbox", { name: "Thread title" }).press("Enter");
  await expect.poll(() => b.title()).toContain("Renamed again in A");
  expect(await title.inputValue()).toBe("Named in B, half");
  expect(await title.evaluate((input) => input === document.activeElement)).toBe(true);
  await title.press("End");
  await title.pressSequentially(" done");
  await title.press("Enter");
  await a.getByTestId("thread").filter({ hasText: "Named in B, half done" }).waitFor();

  // A rename in B whose thread A deletes meanwhile ends unsaved, without an error in B.
  await threadAction(b.locator(".thread-item.current"), "Rename");
  await title.fill("never saved");
  const item = a.locator(".thread-item.current");
  await threadAction(item, "Delete");
  await item.getByRole("button", { name: /^Confirm: delete/ }).click();
  await title.waitFor({ state: "detached" });
  await expect.poll(() => a.getByTestId("thread").count()).toBe(0);
  expect(harness().errors).toEqual([]);

  // The same two tabs, the list empty again: Back returns to the previous thread; a thread deleted in another
  // tab says so.
  await send(a, "first thread");
  await a.getByTestId("new-thread").click();
  await send(a, "second thread");
  await a.goBack();
  await expect.poll(() => transcript(a)).toEqual(["user: first thread", expect.stringContaining("first thread")]);
  await a.goForward();
  await expect.poll(() => transcript(a)).toEqual(["user: second thread", expect.stringContaining("second thread")]);

  // Tab B opens the thread A has open, and deletes it.
  await b.getByTestId("thread").filter({ hasText: "second thread" }).click();
  await expect.poll(() => transcript(b)).toHaveLength(2);
  const doomed = b.locator(".thread-item.current");
  await threadAction(doomed, "Delete");
  await doomed.getByRole("button", { name: /^Confirm: delete/ }).click();
  await a.getByText("This thread was deleted in another tab").waitFor();
  await expect.poll(() => transcript(a)).toEqual([]);
});
