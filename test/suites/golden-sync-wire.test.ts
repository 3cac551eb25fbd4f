/**
 * The sync wire's `removed` list, frozen (test/golden/sync-wire-removed.json):
 * the committed bytes of a push carrying removals, its answer's count and a
 * pull page of removals decode and parse to what they said when written,
 * and today's encoder writes the same bytes, so a server and a device of
 * protocol version 1 keep understanding each other whichever is older.
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { decodeBody, encodeBody, parsePullResponse, parsePushRequest } from "../../src/sync/protocol.js";
import golden from "../golden/sync-wire-removed.json";
import { WIRE_REMOVED_BODIES } from "../golden/sync-wire-removed.js";

const bytes = (base64: string) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));

describe("golden: the sync wire's removals", () => {
  it("a push's removed list reads back and parses as written", () => {
    const decoded = decodeBody(bytes(golden.push));
    expect(decoded).toEqual(WIRE_REMOVED_BODIES.push);
    expect(parsePushRequest(decoded).removed).toEqual(WIRE_REMOVED_BODIES.push.removed);
  });

  it("a push answer's removal count reads back", () => {
    expect(decodeBody(bytes(golden.pushResponse))).toEqual(WIRE_REMOVED_BODIES.pushResponse);
  });

  it("a pull page of removals reads back and parses as written", () => {
    expect(parsePullResponse(decodeBody(bytes(golden.pull)))).toEqual(WIRE_REMOVED_BODIES.pull);
  });

  it("today's encoder writes the frozen bytes", () => {
    for (const [name, body] of Object.entries(WIRE_REMOVED_BODIES))
      expect([...encodeBody(body)], name).toEqual([...bytes(golden[name as keyof typeof golden])]);
  });
});
