/**
 * Thread routes against what the SDK's types promise and the Agent Server
 * answers: the search sorts it accepts, and the thread ids it refuses at
 * create rather than at the first run.
 */
import { afterEach, describe, expect, it } from "vitest";
import { closeServers, openServer } from "../../test/support/agent-server/server.js";

afterEach(closeServers);

const human = (content: string) => ({ messages: [{ type: "human", content }] });

describe("thread search", () => {
  // Once answered 422: sort_by was checked against created_at, updated_at and thread_id only, though the
  // SDK's ThreadSortBy and the Agent Server take status too (a thread list grouped by status).
  it("sorts by status, as the Agent Server does (by name, either order; creation order breaks ties)", async () => {
    const { client } = await openServer("agent-thread-sort");
    const idle = await client.threads.create();
    const paused = await client.threads.create();
    await client.runs.wait(paused.thread_id, "agent", { input: human("approve: x") });
    const idleToo = await client.threads.create();
    const ids = async (sortOrder: "asc" | "desc") =>
      (await client.threads.search({ sortBy: "status", sortOrder })).map((t) => [t.thread_id, t.status]);
    expect(await ids("asc")).toEqual([
      [idle.thread_id, "idle"],
      [idleToo.thread_id, "idle"],
      [paused.thread_id, "interrupted"],
    ]);
    expect(await ids("desc")).toEqual([
      [paused.thread_id, "interrupted"],
      [idleToo.thread_id, "idle"],
      [idle.thread_id, "idle"],
    ]);
  });
});
