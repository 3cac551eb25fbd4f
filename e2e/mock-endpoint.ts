/**
 * A mocked OpenAI-compatible model endpoint for the end-to-end tests
 * (e2e/support.ts re-exports it): the app pointed at it in Settings, and
 * its answers served by a Playwright route (same origin, no network) as the
 * server-sent events such an endpoint streams.
 */
import type { Page, Route } from "playwright";
import { inject } from "vitest";

/** The requests the app sends to the mocked endpoint. */
export const MOCK_COMPLETIONS = "**/mock-llm/v1/chat/completions";

/** Answers like an OpenAI-compatible endpoint, one scripted reply per request: `events` as SSE, then `[DONE]`. */
export function sse(events: unknown[]): string {
  return [...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].join("");
}

/** Points the app at the mocked endpoint (Settings' model form), with `apiKey` when given. */
export async function useEndpoint(page: Page, apiKey?: string): Promise<void> {
  await page.getByTestId("settings").click();
  await page.getByRole("combobox", { name: "Provider" }).selectOption("openai");
  await page.getByRole("textbox", { name: "Base URL" }).fill(`${inject("baseURL")}mock-llm/v1`);
  await page.getByRole("textbox", { name: "Model" }).fill("test-model");
  if (apiKey !== undefined) await page.getByLabel("API key").fill(apiKey);
  await page.getByRole("button", { name: "Save model" }).click();
  await page.getByText("Saved.").waitFor();
  await page.keyboard.press("Escape");
}

/**
 * Answers each request to the mocked endpoint with the text `answer(call)` gives (call 1 the first),
 * streamed as one delta; `calls` counts the requests so far.
 */
export async function mockAnswers(page: Page, answer: (call: number) => string): Promise<{ readonly calls: number }> {
  const model = { calls: 0 };
  await page.route(MOCK_COMPLETIONS, async (route: Route) => {
    model.calls += 1;
    const body = sse([{ choices: [{ delta: { content: answer(model.calls) } }] }]);
    await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body });
  });
  return model;
}
