/** Starting from the storage state the setup project saved. */
import { langgraphTest as test } from "langgraph-checkpoint-indexeddb/playwright";
import { SEEDED_STATE } from "./paths.js";

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
