/** Every matcher fails with a message that says what it saw. */
import { stripVTControlCharacters } from "node:util";
import { langgraphTest as test, waitForThreadIdle } from "langgraph-checkpoint-indexeddb/playwright";

const { expect } = test;
test.use({ langgraph: { dbName: "example-app" } });

/** The message of the error `assertion` fails with. */
async function failure(assertion: Promise<unknown>): Promise<string> {
  const error = await assertion.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the assertion should have failed").toBeInstanceOf(Error);
  // Strip the terminal colours of the diff.
  return stripVTControlCharacters((error as Error).message);
}

test("wrong expectations fail with readable messages", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("hi");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  const options = { dbName: "example-app", timeout: 300 };

  const messages = await failure(expect(page).toHaveThreadMessages("t1", ["hi", "You said: bye"], options));
  expect(messages).toContain('Messages of thread "t1" of database "example-app" (- expected, + received)');
  expect(messages).toContain('- ai: "You said: bye"');
  expect(messages).toContain('+ ai: "You said: hi"');
  expect(messages).toContain("Retried for 300 ms.");

  const count = await failure(expect(page).toHaveCheckpointCount("t1", 7, options));
  expect(count).toContain('Checkpoints of thread "t1" of database "example-app":');
  expect(count).toMatch(/Expected: 7\s+Received: 3/);

  const interrupted = await failure(expect(page).toBeInterruptedAt("t1", "save", options));
  expect(interrupted).toContain('to be interrupted at "save"');
  expect(interrupted).toContain("Received: not interrupted: the run has finished (with no node due");

  const missing = await failure(expect(page).toHaveThreadMessages("nope", [], options));
  expect(missing).toContain('thread "nope" of database "example-app" has no checkpoint.');

  const wrongDb = await failure(expect(page).toHaveCheckpointCount("t1", 3, { ...options, dbName: "other" }));
  expect(wrongDb).toContain('no IndexedDB database "other"; it has "example-app"');
});

test("the waits time out saying what they saw last", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("hi");
  await page.getByTestId("send").click();
  const idle = await langgraph.waitForIdle("t1");
  const since = await failure(langgraph.waitForIdle("t1", { since: idle, timeout: 300 }));
  expect(since).toContain(`waitForThreadIdle: thread "t1" of database "example-app" was not idle after 300 ms`);
  expect(since).toContain(`its latest checkpoint was still ${idle} (the one given as since)`);
  const never = await failure(
    langgraph.waitForCheckpoint("t1", (state) => (state.values.messages as unknown[]).length === 4, {
      timeout: 300,
      checkpointNs: "",
    }),
  );
  expect(never).toContain('waitForCheckpoint: no checkpoint of thread "t1" in database "example-app" passed');
  expect(never).toContain('"content": "You said: hi"');
  const wrongDb = await failure(waitForThreadIdle(page, "t1", { dbName: "exampel-app", timeout: 300 }));
  expect(wrongDb).toContain('the page\'s origin had no IndexedDB database "exampel-app" (it had "example-app")');
});

test("a thread that cannot be read fails .not too, saying why", async ({ page, langgraph }) => {
  const blank = await failure(expect(page).not.toHaveThreadMessages("t1", ["hi"], { timeout: 300 }));
  expect(blank).toContain(
    'needs the page at your app\'s origin, where its IndexedDB lives, and the page is at "about:blank"',
  );
  await page.goto("/");
  await page.getByTestId("composer").fill("hi");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  const options = { dbName: "exmaple-app", timeout: 300 };
  const reads = [
    failure(expect(page).not.toHaveThreadMessages("t1", ["hi", "You said: hi"], options)),
    failure(expect(page).not.toHaveCheckpointCount("t1", 3, options)),
    failure(expect(page).not.toBeInterruptedAt("t1", "save", options)),
    failure(expect(page).toHaveCheckpointCount("t1", 3, options)),
  ];
  for (const message of await Promise.all(reads)) {
    expect(message).toContain("The thread could not be read:");
    expect(message).toContain('no IndexedDB database "exmaple-app"; it has "example-app"');
  }
});

test("the matchers read the fixture's database when given no dbName", async ({ page, langgraph }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill("hi");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  await expect(page).toHaveThreadMessages("t1", ["hi", "You said: hi"]);
  await expect(page).toHaveCheckpointCount("t1", 3);
  const not = await failure(expect(page).not.toHaveThreadMessages("t1", ["hi", "You said: hi"], { timeout: 300 }));
  expect(not).toContain('Expected thread "t1" of database "example-app" not to have these messages');
});

const withGreeting = test.extend<{ greeting: string }>({ greeting: "hi" });

withGreeting("a test extended again keeps the matchers on its expect", async ({ page, langgraph, greeting }) => {
  await page.goto("/");
  await page.getByTestId("composer").fill(greeting);
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("t1");
  await withGreeting.expect(page).toHaveThreadMessages("t1", [greeting, "You said: hi"]);
});

withGreeting.describe("with options given to the extended test", () => {
  // The spelling the docs give for langgraphTest, on a test extended from it (which typed `langgraph` as the helpers).
  withGreeting.use({ langgraph: { dbName: "example-app", cleanup: "threads" } });

  withGreeting("binds the helpers to them", async ({ page, langgraph, greeting }) => {
    await page.goto("/");
    expect(langgraph.dbName).toBe("example-app");
    await page.getByTestId("composer").fill(greeting);
    await page.getByTestId("send").click();
    await langgraph.waitForIdle("t1");
    await withGreeting.expect(page).toHaveThreadMessages("t1", [greeting, "You said: hi"]);
  });
});
