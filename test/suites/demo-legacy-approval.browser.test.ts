/**
 * The demo's threads paused by its earlier static breakpoint
 * (`interruptBefore: ["tools"]`, no question asked yet) are on users' disks:
 * answering them with the approval card's answer still saves (or rejects) the
 * memory. Runs the demo's Session in Chromium on its real databases.
 */
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { afterEach, expect, it } from "vitest";
import { APPROVAL_NODE, listMemories } from "../../demo/src/agent.js";
import { eraseEverything } from "../../demo/src/boot.js";
import { Session } from "../../demo/src/session.js";
import { plainVault } from "../../demo/src/settings.js";
import { DemoDB } from "../../demo/src/threads-db.js";

let session: Session | undefined;
const db = new DemoDB();
afterEach(async () => {
  await session?.close();
  await eraseEverything(db);
});

/** A thread paused as the earlier demo paused it: before `tools`, with no interrupt recorded. */
async function legacyPause(s: Session, threadId: string, text: string): Promise<void> {
  await s.agent.invoke(
    { messages: [new HumanMessage(text)] },
    { ...s.config(threadId), interruptBefore: [APPROVAL_NODE] },
  );
  const state = await s.state(threadId);
  expect(state.next).toEqual([APPROVAL_NODE]);
  expect(state.tasks.flatMap((task) => task.interrupts)).toEqual([]);
}

it("an old breakpoint pause resumes with an edit, and another with a rejection", async () => {
  session = await Session.open(db, plainVault);
  await legacyPause(session, "old-1", "remember that my favourite tree is the oak");
  await session.answer("old-1", { decision: "approve", memories: ["my favourite tree is the birch"] }, () => {});
  const saved = await session.state("old-1");
  expect(saved.next).toEqual([]);
  const texts = (saved.values.messages as BaseMessage[]).map((m) => String(m.content));
  expect(texts.at(-1)).toContain("birch");
  expect((await listMemories(session.store, session.userId)).map((m) => m.text)).toEqual([
    "my favourite tree is the birch",
  ]);

  await legacyPause(session, "old-2", "remember that my pin is 1234");
  await session.answer("old-2", { decision: "reject", reason: "a secret" }, () => {});
  const rejected = await session.state("old-2");
  expect(rejected.next).toEqual([]);
  expect(String((rejected.values.messages as BaseMessage[]).at(-1)?.content)).toContain("you said: a secret");
  expect(await listMemories(session.store, session.userId)).toHaveLength(1);
});
