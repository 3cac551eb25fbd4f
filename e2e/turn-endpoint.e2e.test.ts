/**
 * Turns answered by a model endpoint (a mocked OpenAI-compatible one,
 * e2e/mock-endpoint.ts): a model error in words, an endpoint that cannot be
 * reached, and Regenerate. The other turn actions are in
 * turn-streaming.e2e.test.ts and turn-edit.e2e.test.ts.
 */
import type { Route } from "playwright";
import { expect, test } from "vitest";
import {
  MOCK_COMPLETIONS,
  assistants,
  longMessage,
  mockAnswers,
  ready,
  screenshot,
  send,
  sse,
  submit,
  transcript,
  useEndpoint,
  useHarness,
} from "./support.js";

// The tests point the app at the mock endpoint (a setting of the whole app): one kept page of their own, each
// test at a fresh thread of it (one boot for the file, not one per test).
const endpoint = useHarness({ keepPage: true });

test("a model error reads as a sentence, not JSON, with Retry", async () => {
  const h = endpoint();
  const page = await h.thread();
  let calls = 0;
  await page.route(MOCK_COMPLETIONS, async (route: Route) => {
    calls += 1;
    if (calls === 1) {
      await route.fulfill({
        status: 401,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          error: {
            message: "Incorrect API key provided: sk-test.",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        }),
      });
    } else {
      await route.fulfill({
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: sse([{ choices: [{ delta: { content: "Now it **works**." } }] }]),
      });
    }
  });
  await useEndpoint(page);

  await submit(page, "hello endpoint");
  const status = page.getByTestId("turn-status");
  await status.waitFor();
  expect(await status.getAttribute("data-kind")).toBe("failed");
  const message = (await status.textContent()) ?? "";
  expect(message).toContain("Incorrect API key provided");
  expect(message).not.toContain("{");
  await screenshot(page, "failed");
  await page.reload();
  await ready(page);
  await status.waitFor();
  expect(await status.textContent()).toContain("Incorrect API key provided");
  await page.getByTestId("retry").click();
  await assistants(page).first().waitFor();
  expect(await assistants(page).first().locator("strong").textContent()).toBe("works");
  // The browser logs the 401 it was given, twice (before and after the reload): expected here, and only that.
  const expected = (line: string) => /status of 401/.test(line);
  expect(h.errors.filter(expected).length).toBeGreaterThan(0);
  h.errors.splice(0, h.errors.length, ...h.errors.filter((line) => !expected(line)));
});

test("an endpoint that cannot be reached says so in words, also after a reload", async () => {
  const h = endpoint();
  const page = await h.thread();
  await page.route(MOCK_COMPLETIONS, (route: Route) => route.abort("connectionrefused"));
  await useEndpoint(page);
  await submit(page, "is anyone there?");
  const status = page.getByTestId("turn-status");
  await status.waitFor();
  expect(await status.getAttribute("data-kind")).toBe("failed");
  const reachable = /Could not reach the model endpoint/;
  expect(await status.textContent()).toMatch(reachable);
  await screenshot(page, "unreachable");
  await page.reload();
  await ready(page);
  await status.waitFor();
  expect(await status.textContent()).toMatch(reachable);
  expect(await status.textContent()).not.toContain("Failed to fetch");
  // The browser logs the refused request: expected here, and only that.
  const expected = (line: string) => /ERR_CONNECTION_REFUSED|ERR_FAILED/.test(line);
  h.errors.splice(0, h.errors.length, ...h.errors.filter((line) => !expected(line)));
});

test("Regenerate asks the model again for the last answer, on a new branch", async () => {
  const page = await endpoint().thread();
  // In Markdown, as models write: the chat shows "answer number 1", History's preview the same text.
  const model = await mockAnswers(page, (call) => `${call === 2 ? "# Second\n\n" : ""}**answer** number \`${call}\``);
  await ready(page);
  await useEndpoint(page);
  await send(page, "one");
  await send(page, "two");
  expect(await page.getByTestId("regenerate").count()).toBe(1);
  await page.getByTestId("regenerate").click();
  await expect
    .poll(() => transcript(page))
    .toEqual(["user: one", "assistant: answer number 1", "user: two", "assistant: answer number 3"]);
  expect(model.calls).toBe(3);
  await page.getByTestId("show-history").click();
  await expect.poll(() => page.getByTestId("branch").count()).toBe(2);
  // The first answer to "two" is kept on the other branch; the previews are text, without the Markdown.
  await expect.poll(() => page.locator("#history .answer", { hasText: "answer number 2" }).count()).toBe(1);
  expect(await page.locator("#history .answer").allTextContents()).toEqual([
    "answer number 3",
    "answer number 1",
    "Second answer number 2",
  ]);
  await page.keyboard.press("Escape");
});

test("Regenerate at the end of a long conversation follows the new answer to its end", async () => {
  const page = await endpoint().thread();
  // The regenerated answer is much longer than the one it replaces: it ends below the view.
  await mockAnswers(page, (call) => (call === 3 ? `${longMessage(400)} the end` : `short answer ${call}`));
  await ready(page);
  await useEndpoint(page);
  await send(page, `${longMessage(150)} first`);
  await send(page, `${longMessage(150)} second`);
  await page.getByTestId("regenerate").click();
  await expect.poll(() => assistants(page).last().textContent()).toContain("the end");
  const log = page.locator(".messages");
  await expect.poll(() => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight)).toBeLessThan(50);
});
