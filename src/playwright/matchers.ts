/**
 * `expect(page)` matchers on a thread of the page's database, retrying like
 * Playwright's web-first assertions until they pass or the expect timeout
 * ends, and failing with a readable diff of what was last seen.
 */
import type { ExpectMatcherState, MatcherReturnType, Page } from "playwright/test";
import { callPage } from "./inject.js";
import type { PageThreadState } from "./protocol.js";
import {
  DEFAULT_PAGE_DB_NAME,
  pageDb,
  readThreadState,
  type PageDatabaseOptions,
  type ReadThreadStateOptions,
} from "./threads.js";

/** Options every matcher takes. */
export interface ThreadMatcherOptions extends PageDatabaseOptions {
  /** Retry for this long (ms); default the `expect` timeout. */
  timeout?: number;
  /** A subgraph's namespace instead of the root graph (`""`). */
  checkpointNs?: string;
}

/** Options of `toHaveThreadMessages`. */
export interface ThreadMessagesOptions extends ThreadMatcherOptions {
  /** The channel holding the messages; default `"messages"`. */
  channel?: string;
}

/**
 * One expected message: its text (exact), a RegExp its text matches, or a
 * message-like object whose given fields must match (`content` may be a
 * RegExp; other fields compare as partial deep equality).
 */
export type ExpectedMessage =
  string | RegExp | ({ type?: string; content?: string | RegExp } & Record<string, unknown>);

/** The text of a message's content: the string, or its text blocks joined. */
export function messageText(message: unknown): string {
  const content = (message as { content?: unknown } | null)?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((block: unknown) =>
        typeof block === "string"
          ? block
          : typeof (block as { text?: unknown })?.text === "string"
            ? (block as { text: string }).text
            : "",
      )
      .join("");
  }
  return content === undefined ? "" : JSON.stringify(content);
}

/** Partial deep equality: every field of `expected` is in `actual` and equal (RegExp: matches). */
function partialMatch(actual: unknown, expected: unknown): boolean {
  if (expected instanceof RegExp) return typeof actual === "string" && expected.test(actual);
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((item, i) => partialMatch(actual[i], item))
    );
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null) return false;
    return Object.entries(expected).every(([key, value]) =>
      partialMatch((actual as Record<string, unknown>)[key], value),
    );
  }
  return Object.is(actual, expected);
}

/** Whether `message` is what `expected` describes. */
export function matchesMessage(message: unknown, expected: ExpectedMessage): boolean {
  if (typeof expected === "string") return messageText(message) === expected;
  if (expected instanceof RegExp) return expected.test(messageText(message));
  const { content, ...rest } = expected;
  if (
    content !== undefined &&
    !(content instanceof RegExp ? content.test(messageText(message)) : messageText(message) === content)
  ) {
    return false;
  }
  return partialMatch(message, rest);
}

/** One line per message, for the diff. */
function describeMessage(message: unknown): string {
  const type = (message as { type?: unknown } | null)?.type;
  return `${typeof type === "string" ? type : "?"}: ${JSON.stringify(messageText(message))}`;
}

/** One line per expectation, lined up with {@link describeMessage}. */
function describeExpected(expected: ExpectedMessage, actual: unknown): string {
  if (actual !== undefined && matchesMessage(actual, expected)) return describeMessage(actual);
  if (typeof expected === "string")
    return `${typeof actual === "object" ? describeMessage(actual).split(":")[0] : "?"}: ${JSON.stringify(expected)}`;
  if (expected instanceof RegExp) return `?: ${String(expected)}`;
  const { content, type, ...rest } = expected;
  const text = content instanceof RegExp ? String(content) : content === undefined ? "…" : JSON.stringify(content);
  const more = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : "";
  return `${type ?? "?"}: ${text}${more}`;
}

/** The fixture's database options of each page it is bound to, the matchers' defaults there. */
const fixtureDefaults = new WeakMap<Page, PageDatabaseOptions>();

/**
 * Makes `options` (`dbName`, `encryption`) the matchers' defaults on `page`,
 * or removes them (`undefined`). The `langgraph` fixture calls it for its page
 * and the tabs it opens: a matcher without `dbName` would otherwise read the
 * default database, and its `.not` form would assert nothing there.
 */
export function setMatcherDefaults(page: Page, options: PageDatabaseOptions | undefined): void {
  if (options) fixtureDefaults.set(page, { dbName: options.dbName, encryption: options.encryption });
  else fixtureDefaults.delete(page);
}

/** `options` over the fixture's defaults for `page` (an option given as `undefined` keeps the default). */
function withDefaults<T extends ThreadMatcherOptions>(page: Page, options: T): T {
  const defaults = fixtureDefaults.get(page);
  if (!defaults) return options;
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  return { ...defaults, ...given } as T;
}

/** What one attempt saw: passed or not, and how to say it. */
interface Attempt {
  pass: boolean;
  message: (state: ExpectMatcherState) => string;
}

/** Retries `attempt` until it gives the wanted answer (`pass`, or not with `.not`) or the time is up. */
async function retrying(
  state: ExpectMatcherState,
  name: string,
  options: ThreadMatcherOptions,
  attempt: (remaining: number) => Promise<Attempt>,
): Promise<MatcherReturnType> {
  const timeout = options.timeout ?? state.timeout;
  // Another library's `expect` (Vitest's) has no timeout to give: the deadline was NaN, and a
  // `.not` whose thread kept matching retried for ever.
  if (typeof timeout !== "number" || !Number.isFinite(timeout)) {
    throw new Error(
      `${name} retries until Playwright Test's expect timeout, and this expect has none: use it through ` +
        "@playwright/test (`npm install --save-dev @playwright/test`; langgraphTest.expect, or its " +
        "expect.extend(threadMatchers)), or give the matcher a `timeout` (ms).",
    );
  }
  // Vitest leaves `isNot` undefined outside `.not`, which ended the first try whatever it read.
  const isNot = state.isNot === true;
  const deadline = Date.now() + timeout;
  for (;;) {
    let last: Attempt;
    let failed = false;
    try {
      last = await attempt(Math.max(1, deadline - Date.now()));
    } catch (error) {
      // A read that fails is no answer: neither form may pass on it (a `.not` on a wrong
      // dbName or a missing key would otherwise always pass), so it is retried, then fails.
      const text = error instanceof Error ? error.message : String(error);
      failed = true;
      last = { pass: isNot, message: () => `The thread could not be read: ${text}` };
    }
    if ((!failed && last.pass !== isNot) || Date.now() + 100 > deadline) {
      const hint = state.utils.matcherHint(name, "page", "expected", { isNot });
      const waited = failed || last.pass === isNot ? `\n\nRetried for ${timeout} ms.` : "";
      return { pass: last.pass, name, message: () => `${hint}\n\n${last.message(state)}${waited}` };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The read options shared by the matchers; an open another connection blocks
 * gives up after `blockedTimeoutMs` (what is left of the timeout).
 */
function readOptions(
  options: ThreadMatcherOptions,
  blockedTimeoutMs: number,
): ReadThreadStateOptions & { blockedTimeoutMs: number } {
  return {
    dbName: options.dbName,
    encryption: options.encryption,
    checkpointNs: options.checkpointNs,
    blockedTimeoutMs,
  };
}

/** The same, as the page API takes them. */
function pageReadOptions(options: ThreadMatcherOptions, blockedTimeoutMs: number) {
  return { ...pageDb(options), checkpointNs: options.checkpointNs, blockedTimeoutMs };
}

/** The thread named in messages. */
function where(threadId: string, options: ThreadMatcherOptions): string {
  return `thread "${threadId}" of database "${options.dbName ?? DEFAULT_PAGE_DB_NAME}"`;
}

/**
 * The matchers, for `expect.extend`. `langgraphTest.expect` has them
 * already. In a test with the `langgraph` fixture, its `dbName` and
 * `encryption` are their defaults on its pages; options given override them.
 * A thread that cannot be read (no such database, a missing key, a page
 * without the app's origin) fails both forms, `.not` included.
 */
export const threadMatchers = {
  /**
   * The thread's latest messages are `expected`, one for one: text, RegExp,
   * or partial message objects.
   */
  async toHaveThreadMessages(
    this: ExpectMatcherState,
    page: Page,
    threadId: string,
    expected: readonly ExpectedMessage[],
    given: ThreadMessagesOptions = {},
  ): Promise<MatcherReturnType> {
    const options = withDefaults(page, given);
    const channel = options.channel ?? "messages";
    return retrying(this, "toHaveThreadMessages", options, async (remaining) => {
      const state = await readThreadState(page, threadId, readOptions(options, remaining));
      const value = state?.values[channel];
      const messages = Array.isArray(value) ? value : [];
      const pass =
        state !== undefined &&
        messages.length === expected.length &&
        expected.every((item, i) => matchesMessage(messages[i], item));
      return {
        pass,
        message: (s) => {
          if (!state) return `${where(threadId, options)} has no checkpoint.`;
          if (!Array.isArray(value))
            return `${where(threadId, options)} has no "${channel}" list (channels: ${Object.keys(state.values).join(", ") || "none"}).`;
          const want = expected.map((item, i) => describeExpected(item, messages[i])).join("\n");
          const got = messages.map(describeMessage).join("\n");
          if (s.isNot) return `Expected ${where(threadId, options)} not to have these messages, and it has:\n${got}`;
          return `Messages of ${where(threadId, options)} (- expected, + received):\n${s.utils.diff(want, got) ?? `${want}\n---\n${got}`}`;
        },
      };
    });
  },

  /** The thread has `expected` checkpoints (in its root namespace unless `checkpointNs`). */
  async toHaveCheckpointCount(
    this: ExpectMatcherState,
    page: Page,
    threadId: string,
    expected: number,
    given: ThreadMatcherOptions = {},
  ): Promise<MatcherReturnType> {
    const options = withDefaults(page, given);
    return retrying(this, "toHaveCheckpointCount", options, async (remaining) => {
      const count = await callPage(
        page,
        "toHaveCheckpointCount",
        "count",
        threadId,
        pageReadOptions(options, remaining),
      );
      return {
        pass: count === expected,
        message: (s) =>
          `Checkpoints of ${where(threadId, options)}:\nExpected: ${s.isNot ? "not " : ""}${s.utils.printExpected(expected)}\nReceived: ${s.utils.printReceived(count)}`,
      };
    });
  },

  /**
   * The thread is paused before node `at` (a name), or asking `at` (an
   * `interrupt()` value, or its `question` field, as text); a RegExp may
   * match either. Paused: an interrupt is pending, or (a static breakpoint,
   * `interruptBefore`) nodes are due and no run holds the thread, for a
   * checkpoint written under `runOnThread` (only its lock tells a breakpoint
   * from a node still running). A step whose node failed (an `__error__`
   * pending write) is not paused: the message says "the run failed: …".
   */
  async toBeInterruptedAt(
    this: ExpectMatcherState,
    page: Page,
    threadId: string,
    at: string | RegExp,
    given: ThreadMatcherOptions = {},
  ): Promise<MatcherReturnType> {
    const options = withDefaults(page, given);
    return retrying(this, "toBeInterruptedAt", options, async (remaining) => {
      const read = pageReadOptions(options, remaining);
      const { running } = await callPage(page, "toBeInterruptedAt", "activity", threadId, read);
      const state = await readThreadState(page, threadId, readOptions(options, read.blockedTimeoutMs));
      const questions = (state?.interrupts ?? []).map((item) => interruptText(item.value));
      const nodes = state?.next ?? [];
      const failure = runError(state);
      // A static breakpoint leaves nothing in storage but the nodes due, as does a node still
      // running: only the run lock tells them apart, and it says something only for a run that
      // took it (runOnThread tags its checkpoints with metadata.run_id).
      const locked = typeof state?.metadata.run_id === "string";
      const paused = failure === undefined && (questions.length > 0 || (nodes.length > 0 && locked && !running));
      const hit = (text: string) => (typeof at === "string" ? text === at : at.test(text));
      return {
        pass: paused && [...nodes, ...questions].some(hit),
        message: (s) => {
          const seen = describeInterrupt(state, { nodes, questions, paused, running, locked, failure });
          return `Expected ${where(threadId, options)} ${s.isNot ? "not " : ""}to be interrupted at ${s.utils.printExpected(at)}\nReceived: ${seen}`;
        },
      };
    });
  },
};

/** An interrupt's question: a string value, the `question` field, or its JSON. */
function interruptText(value: unknown): string {
  if (typeof value === "string") return value;
  const question = (value as { question?: unknown } | null)?.question;
  return typeof question === "string" ? question : JSON.stringify(value);
}

/**
 * The error a node of the thread's latest step failed with (LangGraph's
 * `__error__` pending write), as text; undefined when none failed. Such a run
 * stopped before its nodes, but it is not waiting for anyone.
 */
function runError(state: PageThreadState | undefined): string | undefined {
  const write = state?.pendingWrites.find(([, channel]) => channel === "__error__");
  if (!write) return undefined;
  const value = write[2] as { message?: unknown; name?: unknown } | null;
  if (typeof value?.message !== "string") return JSON.stringify(value);
  return typeof value.name === "string" ? `${value.name}: ${value.message}` : value.message;
}

/** What the thread was doing, in words. */
function describeInterrupt(
  state: PageThreadState | undefined,
  seen: {
    nodes: string[];
    questions: string[];
    paused: boolean;
    running: boolean;
    locked: boolean;
    failure: string | undefined;
  },
): string {
  if (!state) return "no checkpoint";
  const { nodes, questions } = seen;
  const before =
    nodes.length > 0 ? `before ${nodes.map((node) => JSON.stringify(node)).join(", ")}` : "with no node due";
  if (seen.failure !== undefined) return `not interrupted: the run failed: ${seen.failure} (${before})`;
  if (!seen.paused && nodes.length > 0 && !seen.locked && questions.length === 0) {
    return `not interrupted as far as can be told: nodes are due (${before}) and no interrupt is pending, and the checkpoint was not written under runOnThread, so its run lock cannot tell a static breakpoint (interruptBefore) from a node still running. Run the graph through runOnThread (checkpoint ${state.checkpointId})`;
  }
  if (!seen.paused) {
    return `not interrupted: ${seen.running ? "a run holds it" : "the run has finished"} (${before}, checkpoint ${state.checkpointId})`;
  }
  const asking = questions.length > 0 ? `, asking ${questions.map((q) => JSON.stringify(q)).join(", ")}` : "";
  return `interrupted ${before}${asking}`;
}
