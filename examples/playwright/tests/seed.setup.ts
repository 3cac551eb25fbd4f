/**
 * The setup project: records a conversation through the app once, keeps it
 * as an `.lgthread` export, and saves a storage state with it seeded under
 * the thread id "seeded", for tests that start from it with
 * `test.use({ storageState })`; and the same file as a storage state built
 * without a browser (`toStorageState`), as a seed kept in git would be.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { langgraphTest as setup, toStorageState } from "langgraph-checkpoint-indexeddb/playwright";
import { FILE_STATE, RECORDED_THREAD, SEEDED_STATE } from "./paths.js";

setup.use({ langgraphOptions: { dbName: "example-app", cleanup: false } });

setup("record a conversation and save it as a storage state", async ({ page, langgraph, baseURL }) => {
  await page.goto("/?thread=recorded");
  await page.getByTestId("composer").fill("hello there");
  await page.getByTestId("send").click();
  await langgraph.waitForIdle("recorded");
  const file = await langgraph.exportThread("recorded");
  await mkdir(dirname(RECORDED_THREAD), { recursive: true });
  await writeFile(RECORDED_THREAD, file);

  await langgraph.clear({ deleteDatabase: true });
  await page.reload();
  await langgraph.seed(RECORDED_THREAD, { threadId: "seeded" });
  await page.context().storageState({ path: SEEDED_STATE, indexedDB: true });

  const state = await toStorageState([RECORDED_THREAD], {
    origin: baseURL!,
    dbName: "example-app",
    threadIds: ["from-file"],
  });
  await writeFile(FILE_STATE, JSON.stringify(state, null, 2));
});
