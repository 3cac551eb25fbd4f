/**
 * The page of the peers bench's per-profile figures (run by profiles.mjs in
 * a browser profile of its own per saver): `?saver=<key>&do=seed&turns=N`
 * grows the long chat on that saver by N turns (from `from`, 0 unless given)
 * and reports the time and `navigator.storage.estimate()`; `?saver=<key>&do=cold&turns=N` is a cold
 * start: this new page, which loads LangGraph and only that saver's code,
 * to the first `getState` of the chat (the turns checked), timed from navigation start
 * (performance.now()'s origin) and from the page's first script.
 */
import { CONTENDERS } from "./contenders.js";
import { CHAT_THREAD, latestState, seed } from "./chat.js";

declare global {
  interface Window {
    __firstScript?: number;
    __peers?: Record<string, number | string>;
  }
}

/** The storage every saver of this page opens (each runs in a profile of its own). */
const COLD_STORAGE = "peers-cold";

async function main(): Promise<Record<string, number | string>> {
  const params = new URLSearchParams(location.search);
  // No saver: what a profile that loaded this page holds before any saver writes.
  if (!params.has("saver")) return { usage: (await navigator.storage.estimate()).usage ?? 0 };
  const contender = CONTENDERS.find((c) => c.key === params.get("saver"));
  if (!contender) throw new Error(`no saver ${params.get("saver")}`);
  const turns = Number(params.get("turns"));
  if (params.get("do") === "seed") {
    const start = performance.now();
    const from = Number(params.get("from") ?? 0);
    const saver = await contender.open(COLD_STORAGE);
    await seed(saver, CHAT_THREAD, from, turns);
    await latestState(saver, from + turns, contender.name);
    const seedMs = performance.now() - start;
    await contender.close(saver);
    const { usage = 0 } = await navigator.storage.estimate();
    return { name: contender.name, seedMs, usage };
  }
  const saver = await contender.open(COLD_STORAGE);
  await latestState(saver, turns, contender.name);
  const fromNavigation = performance.now();
  await contender.close(saver);
  return { name: contender.name, fromNavigation, fromFirstScript: fromNavigation - (window.__firstScript ?? 0) };
}

main().then(
  (result) => (window.__peers = result),
  (error: unknown) => (window.__peers = { error: String((error as Error)?.stack ?? error) }),
);
