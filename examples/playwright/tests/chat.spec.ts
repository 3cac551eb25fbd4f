/** The app under test, through the fixture, the waits and the matchers. */
import { langgraphTest as test } from "langgraph-checkpoint-indexeddb/playwright";

const { expect } = test;
test.use({ langgraph: { dbName: "example-app" } });

test("answers, and the thread holds both messages", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("hi");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  await expect(page).toHaveThreadMessages("t1", ["hi", /^You said: hi$/], { dbName: "example-app" });
  await expect(page).toHaveThreadMessages("t1", [{ type: "human" }, { type: "ai", content: "You said: hi" }], {
    dbName: "example-app",
  });
  await expect(page).toHaveCheckpointCount("t1", 3, { dbName: "example-app" });
  await expect(page.getByTestId("message")).toHaveText(["hi", "You said: hi"]);
});

test("pauses before saving until approved", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("save milk");
  await page.getByTestId("send").click();
  await expect(page).toBeInterruptedAt("t1", "save", { dbName: "example-app" });
  await expect(page.getByTestId("approval")).toBeVisible();
  await page.getByTestId("approve").click();
  await expect(page).not.toBeInterruptedAt("t1", "save", { dbName: "example-app" });
  const state = await langgraph.read("t1");
  expect(state?.values.messages).toHaveLength(3);
});

test("a snapshot restores the threads as they were", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("one");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  const snapshot = await langgraph.snapshot();
  await page.getByTestId("composer").fill("two");
  await page.getByTestId("send").click();
  await expect(page).toHaveThreadMessages("t1", ["one", /one/, "two", /two/], { dbName: "example-app" });
  await langgraph.restore(snapshot);
  await expect(page).toHaveThreadMessages("t1", ["one", "You said: one"], { dbName: "example-app" });
});

test("a restore refused for a file it cannot read leaves the threads as they were", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("one");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  const { dbName, threads } = await langgraph.snapshot();
  await page.getByTestId("composer").fill("two");
  await page.getByTestId("send").click();
  await expect(page).toHaveThreadMessages("t1", ["one", /one/, "two", /two/], { dbName: "example-app" });
  // A snapshot holding a file no serializer reads (as an encrypted app's is without its key), listed first.
  const broken = { dbName, threads: new Map([["t0", new Uint8Array([1, 2, 3])], ...threads]) };
  await expect(langgraph.restore(broken)).rejects.toThrow(/Not a langgraph-thread file/);
  await expect(page).toHaveThreadMessages("t1", ["one", /one/, "two", /two/], { dbName: "example-app" });
});
