/**
 * The graph the local agent server tests serve (Node and Chromium): a chat
 * whose "model" streams its answer token by token (messages-tuple), writes a
 * custom event, waits `delay_ms` (from `config.configurable`, stopping early
 * when the run is aborted), waits until the test calls `letGo(hold)` (a run
 * the test needs going stays going however loaded the machine is; Node
 * only, where graph and test share a realm), keeps the thread busy for
 * `busy_ms` in 60 ms slices (CPU work, as a model run in the page would
 * be), and asks for an approval through `interruptWith` when a message
 * starts with "approve:".
 */
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import {
  END,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph/web";
import { interruptWith } from "../../../src/interrupt/index.js";
import { sleep } from "../runs/scenario.js";

function lastText(messages: BaseMessage[]): string {
  return String(messages[messages.length - 1]?.content ?? "");
}

/** The busy slices run in this realm (see {@link busySlices}). */
let slices = 0;

/**
 * How many 60 ms slices of `busy_ms` work the graph has run in this realm
 * (a page, a worker): where a run's CPU work happens, counted, not timed.
 */
export function busySlices(): number {
  return slices;
}

/** Keeps this thread busy for `ms`, in 60 ms slices with a macrotask between them. */
async function busy(ms: number): Promise<void> {
  for (let spent = 0; spent < ms; spent += 60) {
    slices += 1;
    const end = performance.now() + 60;
    while (performance.now() < end);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

const holds = new Map<string, { gone: Promise<void>; go: () => void }>();

/** The hold of `key`, made by whichever comes first: the run waiting at it, or the test letting it go. */
function holdOf(key: string) {
  let hold = holds.get(key);
  if (!hold) {
    let go!: () => void;
    hold = { gone: new Promise<void>((resolve) => (go = resolve)), go };
    holds.set(key, hold);
  }
  return hold;
}

/** Lets the runs given `configurable.hold: key` go on (now, or when they get there). */
export function letGo(key: string): void {
  holdOf(key).go();
}

/** Waits until the test lets `key` go, or `signal` aborts (then rejects). */
function held(key: unknown, signal: AbortSignal | undefined): Promise<void> {
  if (typeof key !== "string") return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const stop = () => reject(signal?.reason);
    signal?.addEventListener("abort", stop, { once: true });
    void holdOf(key).gone.then(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    });
  });
}

/** The chat graph, uncompiled checkpointer-wise: the server binds its saver. */
export function agentGraph() {
  const State = new StateSchema({ messages: MessagesValue });
  return new StateGraph(State)
    .addNode("agent", async (state, config: LangGraphRunnableConfig) => {
      config.writer?.({ thinking: lastText(state.messages) });
      await sleep(Number(config.configurable?.delay_ms ?? 0), config.signal);
      await held(config.configurable?.hold, config.signal);
      await busy(Number(config.configurable?.busy_ms ?? 0));
      const model = new FakeListChatModel({ responses: [`echo ${lastText(state.messages)}`] });
      const answer = await model.invoke(state.messages, config);
      return { messages: [answer] };
    })
    .addNode("approve", async (state, config: LangGraphRunnableConfig) => {
      const answer = interruptWith<{ question: string }, string>(config, { question: lastText(state.messages) });
      return { messages: [new AIMessage(`approved: ${answer}`)] };
    })
    .addConditionalEdges(START, (state) => (lastText(state.messages).startsWith("approve:") ? "approve" : "agent"), [
      "agent",
      "approve",
    ])
    .addEdge("agent", END)
    .addEdge("approve", END)
    .compile();
}
