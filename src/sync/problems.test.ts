/**
 * A failed round's status carries a code and a sentence an app can show
 * (`status.problem`), not the protocol text, and a round that succeeds
 * clears it. Runs without a server: fetch functions answer as the server
 * does. Node (fake-indexeddb) and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, encodeBody } from "./protocol.js";
import type { SyncProblemCode } from "./problems.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

const json = (status: number, code: string, message: string) => async () =>
  new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { "content-type": "application/json" },
  });

const CASES: [string, (url: string, init: RequestInit) => Promise<Response>, SyncProblemCode, RegExp][] = [
  [
    "a wrong token",
    json(401, "unauthorized", "Missing or unknown token: send `Authorization: Bearer <token>`"),
    "unauthorized",
    /sign-in/,
  ],
  [
    "no server at the address",
    async () => {
      throw new TypeError("fetch failed");
    },
    "offline",
    /Can't reach the sync server/,
  ],
  [
    "the user's quota on the server used up",
    json(413, "quota_exceeded", "This push would store 2000 bytes for this user, over this server's quota of 1000"),
    "server_full",
    /space on the sync server is full/,
  ],
  [
    "the user's apps on the server used up",
    json(413, "too_many_apps", "This user writes to at most 100 apps on this server"),
    "server_full",
    /space on the sync server is full/,
  ],
  [
    "a request too slow to arrive whole (the server's 408)",
    json(408, "request_timeout", "The request did not arrive whole within this server's time limit"),
    "offline",
    /Can't reach the sync server/,
  ],
  ["a database restarting", json(503, "unavailable", "PostgreSQL is unavailable"), "unavailable", /try again/],
  [
    "a proxy's page",
    async () => new Response("<html>", { headers: { "content-type": "text/html" } }),
    "incompatible",
    /address/,
  ],
];

describe("status.problem", () => {
  for (const [what, fetch, code, sentence] of CASES) {
    it(`${what}: code "${code}" and a sentence without protocol text; cleared by a good round`, async () => {
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("problems") }));
      let failing = true;
      const sync = new SyncClient({
        saver,
        url: "http://sync.invalid",
        token: "t",
        fetch: (url, init) =>
          failing
            ? fetch(url, init)
            : Promise.resolve(
                new Response(
                  encodeBody(
                    new URL(url).pathname.endsWith("/hello")
                      ? { v: 1, user: "u", keyRecord: null, hasData: false, seq: 0 }
                      : { v: 1, changes: [], cursor: 0, more: false },
                  ) as Uint8Array<ArrayBuffer>,
                  { headers: { "content-type": SYNC_MEDIA_TYPE } },
                ),
              ),
      });
      await expect(sync.syncNow()).rejects.toThrow();
      expect(sync.status.problem?.code).toBe(code);
      expect(sync.status.problem?.message).toMatch(sentence);
      expect(sync.status.problem?.message).not.toMatch(/GET|\/hello|Bearer|HTTP|token:/);
      failing = false;
      await sync.syncNow();
      expect(sync.status.problem).toBeUndefined();
    });
  }
});

describe("the server's address", () => {
  it("with its scheme in capitals (HTTP://, as typed) is an http(s) URL like any other", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("problems") }));
    const asked: string[] = [];
    const sync = new SyncClient({
      saver,
      url: "HTTP://sync.invalid/",
      token: "t",
      fetch: async (url) => {
        asked.push(url);
        const body = new URL(url).pathname.endsWith("/hello")
          ? { v: 1, user: "u", keyRecord: null, hasData: false, seq: 0 }
          : { v: 1, changes: [], cursor: 0, more: false };
        return new Response(encodeBody(body) as Uint8Array<ArrayBuffer>, {
          headers: { "content-type": SYNC_MEDIA_TYPE },
        });
      },
    });
    await sync.syncNow();
    expect(asked.length).toBeGreaterThan(0);
    for (const url of asked) expect(url).toMatch(/^http:\/\/sync\.invalid\/[a-z]/);
    expect(() => new SyncClient({ saver, url: "sync.invalid", token: "t" })).toThrow(/http\(s\) base URL/);
  });
});
