// The TypeScript of a project with `playwright` and without `@playwright/test`:
// scripts/check-package.mjs compiles it there, strict and without `skipLibCheck`,
// against the packed package's declarations. Not compiled in this repository.
import { readThreadState, seedThread, type PageThreadState } from "langgraph-checkpoint-indexeddb/playwright";
import type { Page } from "playwright";

/** Seeds a thread into the app's database and reads it back. */
export async function seedAndRead(page: Page): Promise<PageThreadState | undefined> {
  await seedThread(page, "thread.lgthread", { dbName: "app", threadId: "t1" });
  return readThreadState(page, "t1", { dbName: "app" });
}
