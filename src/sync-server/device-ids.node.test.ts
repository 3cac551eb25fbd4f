/**
 * A device id has one bound, the protocol's (that of every id, 1,024
 * characters), in a push's body and a pull's query alike. Before, a push
 * took ids of up to 1,024 characters and a pull refused any past 128: a
 * device of such an id pushed, then could not pull without its own pushes
 * coming back. Real server on loopback, real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { newUser, serverForFile, wireCheckpoint } from "../../test/support/sync/harness.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody, type PullResponse } from "../sync/protocol.js";

const served = serverForFile();

async function call(token: string, path: string, body?: Record<string, unknown>) {
  const response = await fetch(`${served.url}/v1${path}`, {
    method: body ? "POST" : "GET",
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": SYNC_MEDIA_TYPE } : {}) },
    body: body
      ? (encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [], deletes: [], ...body }) as Uint8Array<ArrayBuffer>)
      : undefined,
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const msgpack = (response.headers.get("content-type") ?? "").startsWith(SYNC_MEDIA_TYPE);
  return {
    status: response.status,
    body: msgpack ? decodeBody(bytes) : (JSON.parse(new TextDecoder().decode(bytes)) as unknown),
  };
}

describe("sync server: device ids", () => {
  it("a device whose id a push took can pull, without its own pushes", async () => {
    const { token } = newUser("long-device");
    const device = "d".repeat(1024);
    expect((await call(token, "/push", { device, checkpoints: [wireCheckpoint("mine")] })).status).toBe(200);
    expect((await call(token, "/push", { device: "other", checkpoints: [wireCheckpoint("theirs")] })).status).toBe(200);
    const pulled = await call(token, `/pull?since=0&device=${device}`);
    expect(pulled.status).toBe(200);
    const threads = (pulled.body as PullResponse).changes.map((c) =>
      c.kind === "checkpoint" ? c.checkpoint.thread_id : "",
    );
    expect(threads).toEqual(["theirs"]);
  });

  it("refuses an id past the bound in a push and in a pull alike, saying the bound", async () => {
    const { token } = newUser("too-long-device");
    const device = "d".repeat(1025);
    const pushed = await call(token, "/push", { device, checkpoints: [wireCheckpoint("t")] });
    const pulled = await call(token, `/pull?since=0&device=${device}`);
    for (const answer of [pushed, pulled]) {
      expect(answer.status).toBe(400);
      expect(JSON.stringify(answer.body)).toContain("longer than 1024 characters");
    }
    expect((await call(token, "/pull?since=0")).body).toMatchObject({ changes: [] });
  });
});
