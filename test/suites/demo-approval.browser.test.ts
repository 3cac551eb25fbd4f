/**
 * The demo's approval answers, on the demo's Session in Chromium on its real
 * databases. A card answers its question by id: a stale card (another tab
 * answered it, and the thread asked a new question since) cannot answer the
 * new one. The demo's threads paused by its earlier static breakpoint
 * (`interruptBefore: ["tools"]`, no question asked yet) are on users' disks:
 * answering them with the approval card's answer still saves (or rejects) the
 * memory. A pause whose question another tab's run has not asked yet draws
 * a card that cannot answer until it is asked.
 */
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, expect, it } from "vitest";
import { APPROVAL_NODE, listMemories, pendingQuestionId } from "../../demo/src/agent.js";
import { refreshView, type ViewHost } from "../../demo/src/app-view.js";
import { eraseEverything } from "../../demo/src/boot.js";
import { BranchCache } from "../../demo/src/branches.js";
import { isThreadRunning, runOnThread } from "../../demo/src/lib.js";
import { Session } from "../../demo/src/session.js";
import { createApproval } from "../../demo/src/ui/approval.js";
import { createChat } from "../../demo/src/ui/chat.js";
import { h } from "../../demo/src/ui/dom.js";
import { createHistory } from "../../demo/src/ui/history.js";
import { plainVault } from "../../demo/src/settings.js";
import { DemoDB } from "../../demo/src/threads-db.js";
import { demoAtTestSpeed } from "../support/demo-speed.js";

demoAtTestSpeed(); // The local model answers at once: no test here is about its pace.
let session: Session | undefined;
let db = new DemoDB();
afterEach(async () => {
  await session?.close();
  await eraseEverything(db);
  // Erased means deleted and closed: the next test opens its own.
  db = new DemoDB();
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
  await session.answer(
    "old-1",
    { decision: "approve", memories: ["my favourite tree is the birch"] },
    () => {},
    undefined,
  );
  const saved = await session.state("old-1");
  expect(saved.next).toEqual([]);
  const texts = (saved.values.messages as BaseMessage[]).map((m) => String(m.content));
  expect(texts.at(-1)).toContain("birch");
  expect((await listMemories(session.store, session.userId)).map((m) => m.text)).toEqual([
    "my favourite tree is the birch",
  ]);

  await legacyPause(session, "old-2", "remember that my pin is 1234");
  await session.answer("old-2", { decision: "reject", reason: "a secret" }, () => {}, undefined);
  const rejected = await session.state("old-2");
  expect(rejected.next).toEqual([]);
  expect(String((rejected.values.messages as BaseMessage[]).at(-1)?.content)).toContain("you said: a secret");
  expect(await listMemories(session.store, session.userId)).toHaveLength(1);
});

it("a stale card's answer is refused by its question's id, not given to the question asked since", async () => {
  session = await Session.open(db, plainVault);
  await session.send("t", "remember that my favourite tree is the oak", () => {});
  const oak = pendingQuestionId(await session.state("t"));
  expect(oak).toBeTypeOf("string");
  // One tab answers; the conversation goes on to a second question.
  await session.answer("t", { decision: "approve" }, () => {}, oak);
  await session.send("t", "remember that my pin is 1234", () => {});
  const pin = pendingQuestionId(await session.state("t"));
  expect(pin).not.toBe(oak);
  // The other tab's card, still on the oak, answers with its edit: refused, nothing written.
  await expect(
    session.answer("t", { decision: "approve", memories: ["my favourite tree is the birch"] }, () => {}, oak),
  ).rejects.toThrow(/already answered/);
  expect(pendingQuestionId(await session.state("t"))).toBe(pin);
  expect((await listMemories(session.store, session.userId)).map((m) => m.text)).toEqual([
    "my favourite tree is the oak",
  ]);

  // Two tabs answer the pin at once: the one that waited for the other's run is refused under the thread's lock.
  const other = await Session.open(db, plainVault);
  try {
    const answers = [
      session.answer("t", { decision: "reject", reason: "a secret" }, () => {}, pin),
      other.answer("t", { decision: "approve", memories: ["my pin is 0000"] }, () => {}, pin),
    ];
    const [mine, theirs] = await Promise.allSettled(answers);
    expect(mine.status).toBe("fulfilled");
    expect(theirs).toMatchObject({ status: "rejected", reason: { name: "QuestionAnsweredError" } });
  } finally {
    await other.close();
  }
  expect(await listMemories(session.store, session.userId)).toHaveLength(1);
});

it("a fork of a paused checkpoint asks its question again: its card answers by id, and a stale one is refused", async () => {
  session = await Session.open(db, plainVault);
  await session.send("f", "remember that my favourite tree is the oak", () => {});
  const paused = await session.state("f");
  const oak = pendingQuestionId(paused);
  await session.answer("f", { decision: "approve" }, () => {}, oak);
  // Time travel: back to the pause, and on from there on a new branch.
  await session.fork("f", paused.config.configurable?.checkpoint_id as string);
  const forked = await session.state("f");
  expect(forked.next).toEqual([APPROVAL_NODE]);
  const again = pendingQuestionId(forked);
  expect(again).toBeTypeOf("string");
  // Forking wrote nothing to the store: the question is asked again before anything is saved.
  expect(await listMemories(session.store, session.userId)).toHaveLength(1);
  // The fork's card, answered by its id, edits what is saved.
  await session.answer("f", { decision: "approve", memories: ["my favourite tree is the elm"] }, () => {}, again);
  expect(String((await session.state("f")).values.messages.at(-1)?.content)).toContain("elm");
  // A card still drawn for the fork's question cannot answer the question asked since.
  await session.send("f", "remember that my pin is 1234", () => {});
  const pin = pendingQuestionId(await session.state("f"));
  await expect(
    session.answer("f", { decision: "approve", memories: ["my favourite tree is the ash"] }, () => {}, again),
  ).rejects.toThrow(/already answered/);
  expect(pendingQuestionId(await session.state("f"))).toBe(pin);
  expect((await listMemories(session.store, session.userId)).map((m) => m.text)).toEqual([
    "my favourite tree is the oak",
    "my favourite tree is the elm",
  ]);
});

it("the card drawn for another question starts afresh: an edit typed for the one before is not carried over", () => {
  const answers: [string[], string | undefined][] = [];
  let gone = 0;
  const card = createApproval({
    onApprove: (memories, questionId) => answers.push([memories, questionId]),
    onReject: () => {},
    onEdited: () => {},
    onGone: () => gone++,
    onShown: () => {},
  });
  document.body.append(card.el);
  try {
    const editor = () => card.el.querySelector<HTMLTextAreaElement>('[data-testid="approval-args"]')!;
    card.show([{ name: "save_memory", args: { memory: "my favourite tree is the oak" } }], false, "q1");
    editor().value = "my favourite tree is the elm";
    // The same question drawn again (a refresh) keeps the edit.
    card.show([{ name: "save_memory", args: { memory: "my favourite tree is the oak" } }], false, "q1");
    expect(editor().value).toBe("my favourite tree is the elm");
    // Another tab answered it and the agent asked again before this tab saw the thread without a card.
    card.show([{ name: "save_memory", args: { memory: "my pin is 1234" } }], false, "q2");
    expect(editor().value).toBe("my pin is 1234");
    card.el.querySelector<HTMLButtonElement>('[data-testid="approve"]')!.click();
    expect(answers).toEqual([[["my pin is 1234"], "q2"]]);
    // Answered elsewhere, the card goes while it has the focus: the focus is handed on (to the composer).
    card.el.querySelector<HTMLButtonElement>('[data-testid="approve"]')!.focus();
    card.show(undefined);
    expect(card.el.childElementCount).toBe(0);
    expect(gone).toBe(1);
  } finally {
    card.el.remove();
  }
});

/** An approval card in the page, the edits it hands out (memories, reason, question), and its first editor. */
function cardInPage() {
  const edits: [string[], string, string | undefined][] = [];
  const card = createApproval({
    onApprove: () => {},
    onReject: () => {},
    onEdited: ({ memories, reason }, questionId) => edits.push([memories, reason, questionId]),
    onGone: () => {},
    onShown: () => {},
  });
  document.body.append(card.el);
  const editor = () => card.el.querySelector<HTMLTextAreaElement>('[data-testid="approval-args"]')!;
  return { card, edits, editor };
}

it("what was typed in the card drawn while the run went on stays when its question is asked, kept for that question", () => {
  const { card, edits, editor } = cardInPage();
  try {
    const calls = [{ name: "save_memory", args: { memory: "my favourite river is the Loire" } }];
    // Drawn from the checkpoint before the approval step ran: no question yet, the run still going.
    card.show(calls, true, undefined);
    editor().value = "my favourite river is the Rhône";
    editor().dispatchEvent(new Event("input"));
    expect(edits).toEqual([[["my favourite river is the Rhône"], "", undefined]]);
    // The run paused on its question: the same card, with what was typed, kept again for the question's id.
    card.show(calls, false, "q1");
    expect(editor().value).toBe("my favourite river is the Rhône");
    expect(edits.at(-1)).toEqual([["my favourite river is the Rhône"], "", "q1"]);
    // Nothing typed: nothing kept again when asked.
    card.show(undefined);
    card.show(calls, true, undefined);
    card.show(calls, false, "q2");
    expect(editor().value).toBe("my favourite river is the Loire");
    expect(edits).toHaveLength(2);
  } finally {
    card.el.remove();
  }
});

it("a re-render of the card as the user types keeps the focus and selection in that field: the typing lands there", () => {
  const { card, edits, editor } = cardInPage();
  try {
    const reason = () => card.el.querySelector<HTMLInputElement>('[data-testid="approval-reason"]')!;
    const calls = [{ name: "save_memory", args: { memory: "my favourite river is the Loire" } }];
    // Drawn while the run went on: the user starts typing in it; the question is asked, the card redrawn.
    card.show(calls, true, undefined);
    editor().focus();
    editor().setSelectionRange(26, 31);
    card.show(calls, false, "q1");
    // As a keyboard (and Playwright's fill: select, then insert) types: into the focused field. It went
    // to Approve, and the e2e test's edit was lost, the card after a reload showing the proposal.
    expect(document.activeElement).toBe(editor());
    document.execCommand("insertText", false, "Rhône");
    expect(editor().value).toBe("my favourite river is the Rhône");
    expect(edits.at(-1)).toEqual([["my favourite river is the Rhône"], "", "q1"]);
    // A refresh of the same card while the reason is typed, its whole text selected: typed over.
    reason().focus();
    document.execCommand("insertText", false, "not now");
    reason().select();
    card.show(calls, false, "q1");
    expect(document.activeElement).toBe(reason());
    document.execCommand("insertText", false, "maybe later");
    expect(edits.at(-1)).toEqual([["my favourite river is the Rhône"], "maybe later", "q1"]);
  } finally {
    card.el.remove();
  }
});

it("a re-render whose calls changed keeps the typing, focus and caret with their call, not their place", () => {
  const { card, editor } = cardInPage();
  try {
    const editors = () => [...card.el.querySelectorAll<HTMLTextAreaElement>('[data-testid="approval-args"]')];
    const oak = { id: "call-oak", name: "save_memory", args: { memory: "my favourite tree is the oak" } };
    const pin = { id: "call-pin", name: "save_memory", args: { memory: "my pin is 1234" } };
    const river = { id: "call-river", name: "save_memory", args: { memory: "my favourite river is the Loire" } };
    // A pause that asked no question (the earlier demo's): every draw of it is the same card.
    card.show([oak, river], false, undefined);
    editors()[1]!.focus();
    editors()[1]!.setSelectionRange(26, 31);
    document.execCommand("insertText", false, "Rhône");
    // The oak's call goes: the river's editor moves up one, with what was typed, the focus and the caret.
    card.show([river], false, undefined);
    expect(document.activeElement).toBe(editor());
    expect(editor().value).toBe("my favourite river is the Rhône");
    expect([editor().selectionStart, editor().selectionEnd]).toEqual([31, 31]);
    // A call added before it: the river's editor is the second, and still the one typed in.
    card.show([pin, river], false, undefined);
    expect(editors().map((el) => el.value)).toEqual(["my pin is 1234", "my favourite river is the Rhône"]);
    expect(document.activeElement).toBe(editors()[1]);
    document.execCommand("insertText", false, "!");
    expect(editors()[1]!.value).toBe("my favourite river is the Rhône!");
    // Its call gone: the focus goes to no other field, nor to Approve (the next key would approve).
    card.show([pin], false, undefined);
    expect(editors().map((el) => el.value)).toEqual(["my pin is 1234"]);
    expect(card.el.contains(document.activeElement)).toBe(false);
  } finally {
    card.el.remove();
  }
});

/** The app's view of thread `threadId` on `s`, as App draws it (refreshView), with its own chat in the page. */
function viewOf(s: Session, threadId: string): ViewHost {
  const none = () => {};
  const chat = createChat({
    onSend: none,
    onDraft: none,
    onApprove: none,
    onReject: none,
    onCardEdited: none,
    onFork: none,
    onBackToLatest: none,
    onStop: none,
    onRetry: none,
    onRegenerate: none,
    onEdit: none,
    onEditing: none,
  });
  document.body.append(chat.el);
  const host: ViewHost = {
    session: s,
    chat,
    history: createHistory({ onView: none, onClose: none }),
    shell: { historyButton: h("button") },
    branches: new BranchCache((id) => s.timeline(id)),
    currentId: threadId,
    viewing: undefined,
    historyOpen: false,
    rows: [],
    historyReads: 0,
    refresh: () => refreshView(host),
    drawBranches: none,
    streamed: new Map(),
    refreshSeq: 0,
    busyElsewhere: false,
    shown: undefined,
    keptCard: () => Promise.resolve(undefined),
    keptEdit: () => Promise.resolve(undefined),
  };
  return host;
}

it("a card drawn while another tab's run is between its model step and its question cannot answer until it is asked", async () => {
  session = await Session.open(db, plainVault);
  const other = await Session.open(db, plainVault);
  const control = (view: ViewHost, id: string) =>
    view.chat.el.querySelector<HTMLButtonElement | HTMLTextAreaElement>(`[data-testid="${id}"]`);
  // The earlier demo's breakpoint pause, no run anywhere: no question will come, and its card answers it.
  await legacyPause(session, "old", "remember that my favourite tree is the elm");
  const old = viewOf(session, "old");
  await refreshView(old);
  expect(control(old, "approve")?.disabled).toBe(false);
  old.chat.el.remove();
  const view = viewOf(session, "t");
  let ask!: () => void;
  const asked = new Promise<void>((resolve) => (ask = resolve));
  let run: Promise<unknown> = Promise.resolve();
  try {
    // Another tab's run, holding the thread as the demo's runs do (runOnThread): its model step is written
    // (the pending save_memory call), then it stops before the approval step asks, until `ask()`.
    run = runOnThread(
      {
        invoke: async (input: { messages: BaseMessage[] }, config: RunnableConfig) => {
          await other.agent.invoke(input, { ...config, interruptBefore: [APPROVAL_NODE] });
          await asked;
          return other.agent.invoke(null, config);
        },
      },
      { messages: [new HumanMessage("remember that my favourite tree is the oak")] },
      other.config("t"),
      { saver: other.saver },
    );
    await expect.poll(async () => (await session!.state("t")).next).toEqual([APPROVAL_NODE]);
    expect(pendingQuestionId(await session.state("t"))).toBeUndefined();
    expect(await isThreadRunning("t", { dbName: session.saver.dbName })).toBe(true);
    // This tab's view, before its watch of the other tab's run has said anything (busyElsewhere still false).
    await refreshView(view);
    expect(control(view, "approval-args")?.value).toBe("my favourite tree is the oak");
    expect(control(view, "approve")?.disabled).toBe(true);
    expect(control(view, "reject")?.disabled).toBe(true);
    // The composer's hint says why, not "approve or reject first", which the card cannot do yet.
    expect(view.chat.el.querySelector("textarea#composer")?.getAttribute("placeholder")).toMatch(/^Another tab is/);
    // Asked: the card answers its question, by id.
    ask();
    await run;
    const question = pendingQuestionId(await session.state("t"));
    expect(question).toBeTypeOf("string");
    await refreshView(view);
    expect(control(view, "approve")?.disabled).toBe(false);
    expect(control(view, "reject")?.disabled).toBe(false);
    expect(view.chat.el.querySelector("textarea#composer")?.getAttribute("placeholder")).toMatch(/^Approve or reject/);
  } finally {
    ask();
    await run.catch(() => undefined);
    view.chat.el.remove();
    await other.close();
  }
});
