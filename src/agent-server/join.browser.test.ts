/**
 * Joining a run of another tab in Chromium: a same-origin iframe (its own
 * realm and Web Locks client) serves a local agent server and starts runs;
 * the page's server, on the same database, joins them through the SDK
 * `Client`: a live run's events (replayed, then as they come), and a run
 * whose tab closed mid-run (the iframe removed: the browser frees its
 * lock), reported cut short.
 */
import { afterEach, expect, it } from "vitest";
import { openIframeTab } from "../../test/support/iframe-tab.js";
import type { AgentTabApi } from "../../test/support/agent-server/tab-page.js";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

const PAGE_MODULE = new URL("../../test/support/agent-server/tab-page.ts", import.meta.url).href;

afterEach(closeServers);

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const parts: T[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

it("joins another tab's run while it goes, and reports one whose tab closed as cut short", async () => {
  const { saver, client } = await openServer("agent-join-tab");
  const tab = await openIframeTab<AgentTabApi>(PAGE_MODULE, "agentTab");
  try {
    const live = await tab.api.start(saver.dbName, "hello", 300);
    const joined = await collect(client.runs.joinStream(live.threadId, live.runId));
    const events = joined.map((part) => part.event);
    expect(events[0]).toBe("metadata");
    const tokens = joined.filter((part) => part.event === "messages");
    expect(tokens.map((part) => (part.data as unknown as [{ content: string }])[0].content).join("")).toBe(
      "echo hello",
    );
    expect((await client.runs.get(live.threadId, live.runId)).status).toBe("success");
    expect(await collect(client.runs.joinStream(live.threadId, live.runId, { lastEventId: "1" }))).toEqual(
      joined.slice(2),
    );

    const cut = await tab.api.start(saver.dbName, "cut", 10_000);
    expect((await client.runs.get(cut.threadId, cut.runId)).status).not.toBe("error");
    const following = collect(client.runs.joinStream(cut.threadId, cut.runId));
    await new Promise((resolve) => setTimeout(resolve, 200));
    tab.frame.remove();
    const parts = await following;
    expect(parts[0]!.event).toBe("metadata");
    expect(parts.at(-2)).toMatchObject({ event: "error", data: { error: "RunLostError" } });
    expect(parts.at(-1)).toMatchObject({ event: "end", data: { run_id: cut.runId, status: "error" } });
    expect((await client.runs.get(cut.threadId, cut.runId)).status).toBe("error");
    expect((await client.threads.get(cut.threadId)).status).toBe("error");
  } finally {
    tab.frame.remove();
  }
});
