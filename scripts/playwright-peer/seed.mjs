// What a project with `playwright` and without `@playwright/test` runs (a script driving a
// browser): scripts/check-package.mjs copies it into such a project, beside a thread export
// (thread.lgthread), and runs it there with what to expect. Not run from this repository.
//
//   node seed.mjs '{"launch":{…},"checkpointId":"…","messages":2}'
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { chromium } from "playwright";
import { langgraphTest, readThreadState, seedThread } from "langgraph-checkpoint-indexeddb/playwright";

const expected = JSON.parse(process.argv[2]);

// The situation checked: nothing here resolves @playwright/test, the package's files included.
const fromPackage = createRequire(import.meta.resolve("langgraph-checkpoint-indexeddb/playwright"));
assert.throws(() => fromPackage.resolve("@playwright/test"), { code: "MODULE_NOT_FOUND" });

// Every helper works on a page of a plain `playwright` browser.
const server = createServer((_request, response) => {
  response.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>");
});
await new Promise((listening) => server.listen(0, "127.0.0.1", listening));
const browser = await chromium.launch(expected.launch);
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const seeded = await seedThread(page, "thread.lgthread", { dbName: "app", threadId: "t1" });
  assert.equal(seeded.threadId, "t1");
  const state = await readThreadState(page, "t1", { dbName: "app" });
  assert.equal(state?.checkpointId, expected.checkpointId);
  assert.equal(state.values.messages.length, expected.messages);
} finally {
  await browser.close();
  server.close();
}

// The fixture is Playwright Test's: each use of it names the package to install.
const needsRunner = { message: /@playwright\/test.*npm install --save-dev @playwright\/test/s };
assert.throws(() => langgraphTest("a test", () => {}), needsRunner);
assert.throws(() => langgraphTest.use({ langgraph: { dbName: "app" } }), needsRunner);
assert.throws(() => langgraphTest.extend({}), needsRunner);
assert.throws(() => langgraphTest.expect, needsRunner);
console.log("check-package: seeded a page and read it back without @playwright/test");
