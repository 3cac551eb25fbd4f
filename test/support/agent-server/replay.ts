/**
 * What a replay of a finished run tells, as cases both replay-outcomes
 * tests register ({@link replayOutcomeTests}: Node and Chromium): a local
 * agent server on an encrypting saver serving a chat that fails on some
 * messages, runs of it ended on one thread, and a run replayed as the SDK
 * reads it (`runs.joinStream`, `runs.join`), through a client that retries
 * as an app's does and counts its requests.
 */
import { afterEach, expect, it } from "vitest";
import { Client } from "@langchain/langgraph-sdk";
import { AIMessage } from "@langchain/core/messages";
import { MessagesValue, START, StateGraph, StateSchema } from "@langchain/langgraph/web";
import { EncryptedSerializer } from "../../../src/serde/encrypted/index.js";
import { IndexedDBSaver } from "../../../src/saver/index.js";
import type { LocalAgentServer } from "../../../src/agent-server/index.js";
import { freshDbName } from "../databases.js";
import { closeServers, openServer } from "./server.js";

/** What the failing graph's error says: a replay that opens its error event shows it. */
export const FAILURE = "the model refused: quota";

/** A chat that answers a message with its echo, and fails on one starting with "fail" (throws {@link FAILURE}). */
function failingChat() {
  const State = new StateSchema({ messages: MessagesValue });
  return new StateGraph(State)
    .addNode("answer", (state) => {
      const text = String(state.messages.at(-1)?.content ?? "");
      if (text.startsWith("fail")) throw new Error(FAILURE);
      return { messages: [new AIMessage(`echo ${text}`)] };
    })
    .addEdge(START, "answer")
    .compile();
}

/** The raw key of a test's encrypting saver: `fill` each byte. */
export const rawKey = (fill: number) => EncryptedSerializer.fromRawKey(new Uint8Array(32).fill(fill));

/** One part of a stream as the SDK yields it. */
export type Part = { event: string; data: unknown };

/** Every part of `stream`. */
export async function collect(stream: AsyncIterable<Part>): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const { event, data } of stream) parts.push({ event, data });
  return parts;
}

/**
 * An SDK client on `server` with the SDK's own retries (a 5xx asked again,
 * a 4xx not), and how many requests it has sent.
 */
export function retryingClient(server: LocalAgentServer): { client: Client; requests: () => number } {
  let sent = 0;
  const fetch = (input: RequestInfo | URL, init?: RequestInit) => {
    sent += 1;
    return server.fetch(input, init);
  };
  return { client: new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch } }), requests: () => sent };
}

/**
 * A server on an encrypting saver (keeping `keepRunEvents` runs' events),
 * and a thread with `messages` sent in turn, each a run ended (one starting
 * with "fail" fails); `replay` joins a run's stream as the SDK does.
 */
export async function endedRuns(prefix: string, messages: readonly string[], keepRunEvents?: number) {
  const dbName = freshDbName(prefix);
  const saver = new IndexedDBSaver({ dbName, serde: await rawKey(5) });
  const opened = await openServer(prefix, false, { saver, keepRunEvents, graphs: { chat: failingChat() } });
  const { client } = opened;
  const { thread_id: threadId } = await client.threads.create();
  const runIds: string[] = [];
  for (const content of messages) {
    const run = await client.runs.create(threadId, "chat", { input: { messages: [{ type: "human", content }] } });
    await client.runs.join(threadId, run.run_id);
    runIds.push(run.run_id);
  }
  const replay = (runId: string, lastEventId?: string) =>
    collect(client.runs.joinStream(threadId, runId, { lastEventId }));
  return { ...opened, threadId, runIds, replay };
}

/**
 * A failed run whose error event `rekey` sealed away replays as failed
 * (`RunFailedError`), not cut short; an answered one as finished.
 */
async function failedRunAfterRekey(): Promise<void> {
  const { saver, client, threadId, runIds, replay } = await endedRuns("replay-rekey", ["fail now", "hi"]);
  const [failed, answered] = runIds as [string, string];
  const before = await replay(failed);
  expect(before.find((part) => part.event === "error")?.data).toEqual({ error: "Error", message: FAILURE });
  await saver.rekey();
  const after = await replay(failed);
  // Before: [error RunLostError "was cut short: the tab or worker running it closed", end].
  expect(after.map((part) => part.event)).toEqual(["error", "end"]);
  expect(after[0]!.data).toEqual({ error: "RunFailedError", message: expect.stringMatching(/failed.*rekey/) });
  expect(after[1]!.data).toEqual({ run_id: failed, status: "error" });
  // In the place of the error event it stands for: a client that had that event is not told twice.
  const errorId = String(before.findIndex((part) => part.event === "error"));
  expect(await replay(failed, errorId)).toEqual([after[1]]);
  await expect(client.runs.join(threadId, failed)).resolves.toEqual({ __error__: after[0]!.data });
  expect(await replay(answered)).toEqual([{ event: "end", data: { run_id: answered, status: "success" } }]);
  expect((await client.runs.get(threadId, failed)).status).toBe("error");
}

/** A failed run whose events `keepRunEvents` pruned replays as failed, not cut short; an answered one as finished. */
async function failedRunPruned(): Promise<void> {
  const { client, threadId, runIds, replay } = await endedRuns("replay-pruned", ["fail first", "hi", "last"], 1);
  const [failed, answered, kept] = runIds as [string, string, string];
  const pruned = await replay(failed);
  // Before: [error RunLostError, end].
  expect(pruned).toEqual([
    { event: "error", data: { error: "RunFailedError", message: expect.stringMatching(/failed.*pruned/) } },
    { event: "end", data: { run_id: failed, status: "error" } },
  ]);
  await expect(client.runs.join(threadId, failed)).resolves.toEqual({ __error__: pruned[0]!.data });
  expect(await replay(answered)).toEqual([{ event: "end", data: { run_id: answered, status: "success" } }]);
  expect((await replay(kept)).map((part) => part.event)).toEqual(["metadata", "values", "values", "end"]);
}

/** An SDK call's HTTP status: 200 when it resolves, else the error (its `status` and `message`). */
const status = (call: Promise<unknown>) =>
  call.then(
    () => 200,
    (e: { status?: number; message: string }) => e,
  );

/**
 * Another tab changed the key: a replay (and any read) answers 409
 * `KeyChangedError` at once, asked once; `runs.get` still answers.
 */
async function keyChangedElsewhere(): Promise<void> {
  const { server, dbName, threadId, runIds } = await endedRuns("replay-key-changed", ["fail now", "hi"]);
  const [failed, answered] = runIds as [string, string];
  // Another tab's saver on the database changes its key: this tab's key no longer opens it.
  const other = new IndexedDBSaver({ dbName, serde: await rawKey(5) });
  await other.changeKey(await rawKey(7));
  await other.close();
  const { client, requests } = retryingClient(server);
  expect((await client.runs.get(threadId, failed)).status).toBe("error");
  expect((await client.runs.get(threadId, answered)).status).toBe("success");
  for (const replay of [
    () => client.runs.joinStream(threadId, failed).next(),
    () => client.runs.join(threadId, answered),
    () => client.threads.joinStream(threadId).next(),
  ]) {
    const sent = requests();
    // Before: the stream failed part-way and was asked 6 times (MaxReconnectAttemptsError after 20 s);
    // a join answered 500, asked 5 times.
    expect(await status(replay())).toMatchObject({ status: 409, message: expect.stringContaining("KeyChangedError") });
    expect(requests() - sent).toBe(1);
  }
  // This tab can read nothing else either: its state too answers 409, once.
  const sent = requests();
  expect(await status(client.threads.getState(threadId))).toMatchObject({ status: 409 });
  expect(requests() - sent).toBe(1);
}

/**
 * A server opened with a key that never opened its database (a wrong key
 * from the start, not one another tab changed): a read answers 409
 * `DecryptionError` at once, asked once, as the changed key does; no retry
 * can open it either.
 */
async function wrongKeyFromTheStart(): Promise<void> {
  const { dbName, threadId, runIds } = await endedRuns("replay-wrong-key", ["hi"]);
  const saver = new IndexedDBSaver({ dbName, serde: await rawKey(9) });
  const { server } = await openServer("replay-wrong-key", false, { saver, graphs: { chat: failingChat() } });
  const { client, requests } = retryingClient(server);
  for (const read of [
    () => client.threads.getState(threadId),
    () => client.runs.join(threadId, runIds[0]!),
    () => client.runs.joinStream(threadId, runIds[0]!).next(),
  ]) {
    const sent = requests();
    // Before: a 500, which the SDK asked again 5 times over some 20 s.
    expect(await status(read())).toMatchObject({ status: 409, message: expect.stringContaining("DecryptionError") });
    expect(requests() - sent).toBe(1);
  }
}

/** Registers the replay cases above, each an `it`, with the servers they open closed after each. */
export function replayOutcomeTests(): void {
  afterEach(closeServers);
  it(
    "a failed run whose error event rekey sealed away replays as failed, not cut short; an answered one as finished",
    failedRunAfterRekey,
  );
  it(
    "a failed run whose events keepRunEvents pruned replays as failed, not cut short; an answered one as finished",
    failedRunPruned,
  );
  it(
    "another tab changed the key: a replay answers 409 KeyChangedError at once, and runs.get still answers",
    keyChangedElsewhere,
  );
  it("a key that never opened the database: a read answers 409 DecryptionError at once", wrongKeyFromTheStart);
}
