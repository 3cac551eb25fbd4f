/** Starting from the storage states the setup project saved: one from a browser, one built from the file. */
import { langgraphTest as test } from "langgraph-checkpoint-indexeddb/playwright";
import { FILE_STATE, RECORDED_THREAD, SEEDED_STATE } from "./paths.js";

const { expect } = test;
test.use({ storageState: SEEDED_STATE, langgraphOptions: { dbName: "example-app" } });

test("the seeded conversation is there, and the app opens it cleanly", async ({ page }) => {
  // The app's saver uses onWipe: "throw": a restored database reported "wiped" would fail every call.
  await page.goto("/?thread=seeded");
  await expect(page.getByTestId("message")).toHaveText(["hello there", "You said: hello there"]);
  await expect(page).toHaveThreadMessages("seeded", ["hello there", "You said: hello there"], {
    dbName: "example-app",
  });
  await page.getByTestId("composer").fill("again");
  await page.getByTestId("send").click();
  await expect(page.getByTestId("message")).toHaveText(["hello there", /hello there/, "again", "You said: again"]);
});

test.describe("a storage state built by toStorageState", () => {
  test.use({ storageState: FILE_STATE });

  test("the app reads the thread as seeded, and opens the database cleanly", async ({ page, langgraph }) => {
    await page.goto("/?thread=from-file");
    await expect(page.getByTestId("message")).toHaveText(["hello there", "You said: hello there"]);
    // Equal to the same file seeded through the page.
    await langgraph.seed(RECORDED_THREAD, { threadId: "through-page" });
    const throughPage = await langgraph.read("through-page");
    expect(await langgraph.read("from-file")).toEqual({ ...throughPage, threadId: "from-file" });
  });
});
