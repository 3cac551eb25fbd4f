/**
 * An answer cut off by the network. Chromium's fetch takes a connection
 * closed in the middle of the response headers as a whole response: it
 * parses the headers it got (status 200, the content type, no length yet)
 * and resolves with an empty or partial body, no error. Convergence seed
 * 5117 (40 operations, a Chromium device behind a link cutting connections)
 * failed there: "sync failed for good: ... The body is not valid
 * MessagePack: Unexpected end of MessagePack data". The fetch here returns
 * what Chromium's did; Node (fake-indexeddb) and Chromium.
 */
import { describe, expect, it } from "vitest";
import { IndexedDBSaver } from "../saver/index.js";
import { SyncClient } from "./client.js";
import { SYNC_MEDIA_TYPE, SYNC_PROTOCOL_VERSION, encodeBody } from "./protocol.js";
import { SyncError } from "./transport.js";
import { syncProblem } from "./problems.js";
import { freshDbName, trackSavers } from "../../test/support/databases.js";

const track = trackSavers<IndexedDBSaver>();

const HELLO = encodeBody({ v: SYNC_PROTOCOL_VERSION, user: "u", keyRecord: null, hasData: false, seq: 0 });

/** Answers /hello with its first `keep` bytes, as a 200 with the protocol's content type. */
const cutAt = (keep: number) => (): Promise<Response> =>
  Promise.resolve(
    new Response(HELLO.slice(0, keep) as Uint8Array<ArrayBuffer>, { headers: { "content-type": SYNC_MEDIA_TYPE } }),
  );

describe("an answer the network cut short", () => {
  for (const keep of [0, 1, Math.floor(HELLO.length / 2), HELLO.length - 1]) {
    it(`a /hello body of ${keep} of its ${HELLO.length} bytes: offline and retryable, not bad_response`, async () => {
      const saver = track(new IndexedDBSaver({ dbName: freshDbName("cut-answer") }));
      const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: cutAt(keep) });
      const error = await sync.syncNow().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SyncError);
      expect({ code: (error as SyncError).code, retryable: (error as SyncError).retryable }).toEqual({
        code: "offline",
        retryable: true,
      });
      expect(syncProblem(error).code).toBe("offline");
    });
  }

  it("a whole body that is not MessagePack is still bad_response, not retried", async () => {
    const saver = track(new IndexedDBSaver({ dbName: freshDbName("cut-answer") }));
    const junk = () =>
      Promise.resolve(new Response(new Uint8Array([0xc1]), { headers: { "content-type": SYNC_MEDIA_TYPE } }));
    const sync = new SyncClient({ saver, url: "http://sync.invalid", token: "t", fetch: junk });
    const error = (await sync.syncNow().catch((e: unknown) => e)) as SyncError;
    expect({ code: error.code, retryable: error.retryable }).toEqual({ code: "bad_response", retryable: false });
  });
});
