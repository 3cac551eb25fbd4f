/**
 * The model picker: an OpenAI-compatible endpoint's models listed from its
 * `GET /models`, chosen from a list, saved with the settings and used for
 * the chat; an endpoint that offers no list leaves a text field. And a
 * thread's custom instructions: the system message the endpoint receives
 * before that thread's conversation (and no other's). The
 * endpoint is a real HTTP server of this test on 127.0.0.1 (another origin
 * than the demo: the page's requests go through CORS as they would to a
 * local model server).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ready, send, transcript, useHarness, threadAction } from "./support.js";

// Each test on empty storage, in the page the test before had (its renderer kept: e2e/support.ts, `cleanPage`).
const harness = useHarness({ cleanPage: true });

/** What the stub endpoint was asked: `METHOD path model?`. */
const requests: string[] = [];
/** The messages of each chat request, as `role: content`. */
const chats: string[][] = [];
let server: Server;
let endpoint: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    response.setHeader("access-control-allow-origin", "*");
    response.setHeader("access-control-allow-headers", "authorization, content-type");
    if (request.method === "OPTIONS") return void response.writeHead(204).end();
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const parsed = body
        ? (JSON.parse(body) as { model: string; messages: { role: string; content: string }[] })
        : undefined;
      const model = parsed?.model ?? "";
      if (parsed) chats.push(parsed.messages.map((m) => `${m.role}: ${m.content}`));
      requests.push(`${request.method} ${request.url} ${request.headers.authorization ?? ""} ${model}`.trim());
      if (request.method === "GET" && request.url === "/listing/v1/models") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ object: "list", data: [{ id: "stub-small" }, { id: "stub-large" }] }));
      } else if (request.method === "POST" && request.url?.endsWith("/v1/chat/completions")) {
        response.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = { choices: [{ delta: { role: "assistant", content: `Answer from ${model}.` } }] };
        response.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
      } else {
        response.writeHead(404, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: "no such route" } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

async function openModelSettings(page: Page, baseUrl: string): Promise<void> {
  await page.getByTestId("settings").click();
  await page.getByRole("combobox", { name: "Provider" }).selectOption("openai");
  await page.getByRole("textbox", { name: "Base URL" }).fill(baseUrl);
  await page.getByLabel("API key").fill("sk-stub");
  await page.getByTestId("list-models").click();
}

test("models are listed from the endpoint, the one picked is saved and answers", async () => {
  const page = await harness().page();
  await ready(page);
  await openModelSettings(page, `${endpoint}/listing/v1`);
  const picker = page.getByRole("combobox", { name: "Model" });
  await picker.waitFor();
  expect(await picker.locator("option").allTextContents()).toEqual(["gpt-4o-mini", "stub-large", "stub-small"]);
  expect(await page.getByRole("textbox", { name: "Model" }).isHidden()).toBe(true);
  await picker.selectOption("stub-large");
  await page.getByRole("button", { name: "Save model" }).click();
  await page.getByText("Saved.").waitFor();
  await page.keyboard.press("Escape");
  await send(page, "which model?");
  await expect.poll(() => transcript(page)).toEqual(["user: which model?", "assistant: Answer from stub-large."]);
  expect(requests).toContain("GET /listing/v1/models Bearer sk-stub");
  expect(requests).toContain("POST /listing/v1/chat/completions Bearer sk-stub stub-large");

  // Kept with the settings: after a reload the list is read again, with the saved model chosen.
  await page.reload();
  await ready(page);
  await page.getByTestId("settings").click();
  await expect.poll(() => page.getByRole("combobox", { name: "Model" }).inputValue()).toBe("stub-large");
});

test("an endpoint that cannot be reached is said so, not taken for one that offers no list; without a list, the model is typed; a thread's custom instructions reach it before that thread's conversation only", async () => {
  const page = await harness().page();
  await ready(page);
  // Port 9 (discard) on loopback: nothing listens, the connection is refused.
  await openModelSettings(page, "http://127.0.0.1:9/v1");
  const unreachable = page.getByText(/^Could not reach the endpoint: check the base URL/);
  await unreachable.waitFor();
  // The browser's own words ("Failed to fetch") on hover, not in the sentence.
  expect(await unreachable.getAttribute("title")).toBe("Failed to fetch");
  expect(await page.getByText(/offers no list of models/).count()).toBe(0);
  // The refused connection is reported in the console; that one is expected.
  harness().errors.splice(0);

  // A plain-http server on another machine (Ollama on the LAN): the page's own policy forbids it. Said as such,
  // not as a server that does not answer, and not saved; nothing is asked of it.
  await page.getByRole("textbox", { name: "Base URL" }).fill("http://192.168.1.20:11434/v1");
  await page.getByTestId("list-models").click();
  await page.getByText(/^This page may use plain http:\/\/ only for a server on this machine/).waitFor();
  await page.getByRole("button", { name: "Save model" }).click();
  await page.getByText(/^Could not save: This page may use plain http:\/\/ only/).waitFor();
  expect(harness().errors).toEqual([]);
  await page.keyboard.press("Escape");

  // An endpoint without a list of models: the model's name is typed.
  await openModelSettings(page, `${endpoint}/bare/v1`);
  await page.getByText(/offers no list of models \(it answered 404 Not Found: no such route\)/).waitFor();
  // The browser reports the 404 in the console; that one is expected.
  expect(harness().errors.splice(0)).toEqual([expect.stringMatching(/404/)]);
  expect(await page.getByRole("combobox", { name: "Model" }).isHidden()).toBe(true);
  await page.getByRole("textbox", { name: "Model" }).fill("stub");
  await page.getByRole("button", { name: "Save model" }).click();
  await page.getByText("Saved.").waitFor();
  await page.keyboard.press("Escape");
  await send(page, "first question");
  const note = page.getByTestId("instructions-note");
  expect(await note.isHidden()).toBe(true);

  // Edited from the thread's menu in the sidebar.
  await threadAction(page.locator(".thread-item.current"), "Instructions");
  await page.getByTestId("instructions-input").fill("Answer like a pirate.");
  await page.getByTestId("instructions-save").click();
  await note.waitFor();
  expect(await page.getByTestId("instructions-text").textContent()).toBe("Answer like a pirate.");
  const before = chats.length;
  await send(page, "second question");
  await expect.poll(() => chats.length).toBe(before + 1);
  const sent = chats.at(-1)!;
  expect(sent.slice(1)).toEqual([
    "system: Answer like a pirate.",
    "user: first question",
    "assistant: Answer from stub.",
    "user: second question",
  ]);
  // Not part of the thread: the conversation shows no system message.
  expect(await transcript(page)).toHaveLength(4);

  // Another thread has none.
  await page.getByTestId("new-thread").click();
  await expect.poll(() => note.isHidden()).toBe(true);
  await send(page, "elsewhere");
  await expect.poll(() => chats.length).toBe(before + 2);
  expect(chats.at(-1)!.filter((line) => line.startsWith("system:"))).toHaveLength(1);

  // Kept with the thread: after a reload, back on it, they show, and the note edits them.
  await page.reload();
  await ready(page);
  await page.getByTestId("thread").filter({ hasText: "first question" }).click();
  await note.waitFor();
  await page.getByTestId("instructions-edit").click();
  // The editor opens once the thread's instructions are read (and unsealed).
  await expect.poll(() => page.getByTestId("instructions-input").inputValue()).toBe("Answer like a pirate.");
  await page.getByTestId("instructions-input").fill("");
  await page.getByTestId("instructions-save").click();
  await expect.poll(() => note.isHidden()).toBe(true);
});
