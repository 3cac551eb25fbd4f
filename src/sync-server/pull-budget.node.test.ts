/**
 * A pull page's budget against a chain the change log holds backwards: a
 * client that pushes a thread's checkpoints newest first puts every
 * ancestor after its child in the log, and a page carries a checkpoint's
 * later ancestors before it. Real server on loopback, real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { newUser, serverForFile, wireCheckpoint } from "../../test/support/sync/harness.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody, type PullResponse } from "../sync/protocol.js";

const served = serverForFile();

/** Checkpoints in the chain, and the bytes of each one's value: 12 MiB in all, past a page's 8 MiB. */
const CHAIN = 12;
const VALUE_BYTES = 1024 * 1024;

const idOf = (i: number) => `1f0aaaaa-0000-6000-8000-${String(i).padStart(12, "0")}`;

async function call(path: string, token: string, body?: Uint8Array) {
  const response = await fetch(`${served.url}/v1${path}`, {
    method: body ? "POST" : "GET",
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": SYNC_MEDIA_TYPE } : {}) },
    body: body as Uint8Array<ArrayBuffer> | undefined,
  });
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
}

describe("sync server: a pull page and a chain the log holds backwards", () => {
  it("keeps each page within its budget, and brings every checkpoint, page by page", async () => {
    const { token } = newUser("backwards");
    // Newest first, one push each: checkpoint i's parent is i - 1, and reaches the server after it.
    for (let i = CHAIN; i >= 1; i--) {
      const checkpoint = wireCheckpoint("chain", [], idOf(i));
      if (i > 1) checkpoint.parent_checkpoint_id = idOf(i - 1);
      checkpoint.channel_versions = { value: i };
      checkpoint.blobs = [{ channel: "value", version: i, value: ["bytes", new Uint8Array(VALUE_BYTES).fill(i)] }];
      await call("/push", token, encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [checkpoint], deletes: [] }));
    }
    const received = new Set<string>();
    const sizes: number[] = [];
    let since = 0;
    for (let pages = 0; pages < 3 * CHAIN; pages++) {
      const bytes = await call(`/pull?since=${since}`, token);
      sizes.push(bytes.length);
      const page = decodeBody(bytes) as PullResponse;
      for (const change of page.changes)
        if (change.kind === "checkpoint") received.add(change.checkpoint.checkpoint_id);
      since = page.cursor;
      if (!page.more) break;
    }
    // Before, the first page carried the whole chain ahead of the newest checkpoint, past any budget:
    // 12.6 MB here, and up to the user's quota (1 GiB) in one answer built in the server's memory.
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8 * 1024 * 1024 + 64 * 1024);
    expect([...received].sort()).toEqual(Array.from({ length: CHAIN }, (_, i) => idOf(i + 1)));
  });
});
