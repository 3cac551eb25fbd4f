/**
 * The example app: one thread (`?thread=` in the address, default "t1"),
 * its messages read from the checkpoint, a composer that runs the agent
 * through `runOnThread` (so tests can tell when a run holds the thread).
 */
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { IndexedDBSaver, runOnThread } from "langgraph-checkpoint-indexeddb";
import { buildAgent } from "./agent.js";

const threadId = new URLSearchParams(location.search).get("thread") ?? "t1";
const config = { configurable: { thread_id: threadId } };
const saver = new IndexedDBSaver({ dbName: "example-app", onWipe: "throw" });
const byTestId = <T extends HTMLElement>(id: string) => document.querySelector<T>(`[data-testid="${id}"]`)!;
const draft = byTestId<HTMLParagraphElement>("draft");
const graph = buildAgent(saver, (text) => (draft.textContent = text));

async function render(): Promise<void> {
  const state = await graph.getState(config);
  const messages = (state.values as { messages?: BaseMessage[] }).messages ?? [];
  byTestId("messages").replaceChildren(
    ...messages.map((message) => {
      const item = document.createElement("li");
      item.dataset.testid = "message";
      item.dataset.role = message.getType() === "human" ? "user" : "assistant";
      item.textContent = String(message.content);
      return item;
    }),
  );
  byTestId("approval").hidden = !state.next.includes("save");
  draft.textContent = "";
}

byTestId<HTMLFormElement>("form").addEventListener("submit", (event) => {
  event.preventDefault();
  const composer = byTestId<HTMLInputElement>("composer");
  const text = composer.value;
  composer.value = "";
  void runOnThread(graph, { messages: [new HumanMessage(text)] }, config, { multitask: "enqueue" }).then(render);
});

byTestId("approve").addEventListener("click", () => {
  void runOnThread(graph, null, config, { multitask: "enqueue" }).then(render);
});

void render();
