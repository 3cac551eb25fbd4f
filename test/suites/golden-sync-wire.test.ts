/**
 * The sync wire's `removed` list, frozen (test/golden/sync-wire-removed.json),
 * and the hello answers of servers before and with apps (test/golden/sync-wire-apps.json):
 * the committed bytes of a push carrying removals, its answer's count and a
 * pull page of removals decode and parse to what they said when written,
 * and today's encoder writes the same bytes, so a server and a device of
 * protocol version 1 keep understanding each other whichever is older.
 * Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { decodeBody, encodeBody, type HelloResponse } from "../../src/sync/protocol.js";
import { parsePullResponse, parsePushRequest } from "../../src/sync/protocol-checks.js";
import { spaceOf } from "../../src/sync/engine.js";
import golden from "../golden/sync-wire-removed.json";
import { WIRE_REMOVED_BODIES } from "../golden/sync-wire-removed.js";
import appsGolden from "../golden/sync-wire-apps.json";
import { WIRE_APPS_BODIES } from "../golden/sync-wire-apps.js";

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

describe("golden: the sync wire's app scopes", () => {
  it("hello answers from before and with apps read back, and name the space a device keeps its state under", () => {
    const read = (name: keyof typeof appsGolden) => decodeBody(bytes(appsGolden[name])) as HelloResponse;
    expect(read("helloBefore")).toEqual(WIRE_APPS_BODIES.helloBefore);
    expect(read("helloUnscoped")).toEqual(WIRE_APPS_BODIES.helloUnscoped);
    expect(read("helloOwn")).toEqual(WIRE_APPS_BODIES.helloOwn);
    // A server from before apps, and the app holding the user's own space: the state as before apps.
    expect(spaceOf(read("helloBefore"), "chat")).toBe("ada");
    expect(spaceOf(read("helloUnscoped"), "chat")).toBe("ada");
    expect(spaceOf(read("helloOwn"), "notes")).toBe("ada\u001fnotes");
    // An answer for another app than the one asked for is refused.
    expect(() => spaceOf(read("helloOwn"), "chat")).toThrow(/names app "notes"/);
  });

  it("today's encoder writes the frozen bytes", () => {
    for (const [name, body] of Object.entries(WIRE_APPS_BODIES))
      expect([...encodeBody(body)], name).toEqual([...bytes(appsGolden[name as keyof typeof appsGolden])]);
  });
});
