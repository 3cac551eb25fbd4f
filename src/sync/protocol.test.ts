/**
 * The wire's checks of a checkpoint's `chain` (row binding version 3): the
 * push the server validates and the pull the client validates both go
 * through `parseCheckpoint`, so a malformed chain is refused on both sides
 * and a well-formed one is carried verbatim. Pure: no IndexedDB, no server.
 */
import { describe, expect, it } from "vitest";
import { ProtocolError, SYNC_PROTOCOL_VERSION, decodeBody, encodeBody } from "./protocol.js";
import { parsePullResponse, parsePushRequest } from "./protocol-checks.js";

const CHAIN = "0123456789abcdef".repeat(4);

const checkpoint = (fields: Record<string, unknown>) => ({
  thread_id: "t",
  checkpoint_ns: "",
  checkpoint_id: "2",
  parent_checkpoint_id: "1",
  checkpoint: ["msgpack+aes-gcm", new Uint8Array([1, 2, 3])],
  metadata: ["msgpack+aes-gcm", new Uint8Array([4, 5])],
  channel_versions: { messages: 2 },
  blobs: [],
  writes: [],
  ...fields,
});

/** Both ways a checkpoint crosses the wire, as the body really travels (encoded, decoded). */
const sides: [string, (cp: unknown) => unknown][] = [
  [
    "a push (server side)",
    (cp) =>
      parsePushRequest(decodeBody(encodeBody({ v: SYNC_PROTOCOL_VERSION, checkpoints: [cp], deletes: [] })))
        .checkpoints[0],
  ],
  [
    "a pull answer (client side)",
    (cp) => {
      const body = {
        v: SYNC_PROTOCOL_VERSION,
        changes: [{ kind: "checkpoint", seq: 1, checkpoint: cp }],
        cursor: 1,
        more: false,
      };
      const change = parsePullResponse(decodeBody(encodeBody(body))).changes[0]!;
      return change.kind === "checkpoint" ? change.checkpoint : undefined;
    },
  ],
];

const MALFORMED: [string, unknown][] = [
  ["63 hex characters", CHAIN.slice(1)],
  ["65 hex characters", `${CHAIN}0`],
  ["uppercase hex", CHAIN.toUpperCase()],
  ["a non-hex character", `${CHAIN.slice(1)}g`],
  ["a trailing newline", `${CHAIN}\n`],
  ["a number", 7],
  ["bytes", new Uint8Array(32)],
  ["an empty string", ""],
];

describe("WireCheckpoint.chain", () => {
  for (const [side, parse] of sides) {
    it(`${side}: a 64-hex chain is carried verbatim`, () => {
      expect(parse(checkpoint({ chain: CHAIN }))).toMatchObject({ chain: CHAIN, parent_checkpoint_id: "1" });
    });

    it(`${side}: absent or null means a binding version 1/2 row, no chain field`, () => {
      for (const cp of [checkpoint({}), checkpoint({ chain: null })]) {
        const parsed = parse(cp) as Record<string, unknown>;
        expect(parsed.checkpoint_id).toBe("2");
        expect("chain" in parsed).toBe(false);
      }
    });

    for (const [what, chain] of MALFORMED) {
      it(`${side}: ${what} is refused with a ProtocolError naming the field`, () => {
        let error: unknown;
        try {
          parse(checkpoint({ chain }));
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ProtocolError);
        expect((error as Error).message).toMatch(/\.chain must be 64 lowercase hex characters/);
      });
    }
  }
});

describe("WireCheckpoint.parent_writes (row binding version 4)", () => {
  const LIST = [
    ["task-a", -3, "__interrupt__"],
    ["task-a", 0, "messages"],
  ];
  for (const [side, parse] of sides) {
    it(`${side}: a list of [task id, idx, channel] is carried verbatim; absent or null means none`, () => {
      expect(parse(checkpoint({ chain: CHAIN, parent_writes: LIST }))).toMatchObject({ parent_writes: LIST });
      for (const cp of [checkpoint({ chain: CHAIN }), checkpoint({ chain: CHAIN, parent_writes: null })]) {
        expect("parent_writes" in (parse(cp) as Record<string, unknown>)).toBe(false);
      }
    });

    const malformed: [string, unknown][] = [
      ["not a list", "task-a"],
      ["an entry of two", [["task-a", 0]]],
      ["a fractional idx", [["task-a", 0.5, "messages"]]],
      ["an idx as a string", [["task-a", "0", "messages"]]],
      ["a channel holding U+0000", [["task-a", 0, "mess\u0000ages"]]],
      ["an empty task id", [["", 0, "messages"]]],
    ];
    for (const [what, list] of malformed) {
      it(`${side}: ${what} is refused with a ProtocolError naming the field`, () => {
        expect(() => parse(checkpoint({ chain: CHAIN, parent_writes: list }))).toThrow(ProtocolError);
        expect(() => parse(checkpoint({ chain: CHAIN, parent_writes: list }))).toThrow(/\.parent_writes/);
      });
    }
  }
});

describe("decodeBody: decoding work bounded", () => {
  const limits = { maxValues: 100, maxContainer: 10, maxDepth: 3 };
  const refuses = (value: unknown) =>
    expect(() => decodeBody(encodeBody(value), limits)).toThrow(/within the protocol's limits/);

  it("reads bodies at the limits", () => {
    const atLimits = {
      a: [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
      b: Object.fromEntries(range(10).map((i) => [`k${i}`, i])),
    };
    expect(decodeBody(encodeBody(atLimits), limits)).toEqual(atLimits);
  });

  it("refuses a map or an array past the container limit, too deep a nesting, and too many values", () => {
    refuses(range(11));
    refuses(Object.fromEntries(range(11).map((i) => [`k${i}`, i])));
    refuses({ a: { b: { c: { d: 1 } } } });
    refuses(range(10).map(() => range(10)));
  });

  it("keeps the protocol's own limits by default", () => {
    expect(() => decodeBody(encodeBody(range(60_000)))).toThrow(ProtocolError);
    expect(decodeBody(encodeBody(range(50_000)))).toHaveLength(50_000);
  });
});

describe("ids the wire cannot carry as they are", () => {
  it.each([
    ["U+0000", "x\u0000y", /must not contain U\+0000/],
    ["a lone high surrogate", "x\ud800", /lone surrogate/],
    ["a lone low surrogate", "x\udbff", /lone surrogate/],
  ])("refuses a thread id with %s", (_label, threadId, message) => {
    const push = { v: SYNC_PROTOCOL_VERSION, checkpoints: [checkpoint({ thread_id: threadId })], deletes: [] };
    expect(() => parsePushRequest(push)).toThrow(message);
  });

  it("takes a well-formed surrogate pair, and two ids that differ only in lone surrogates never meet", () => {
    const push = { v: SYNC_PROTOCOL_VERSION, checkpoints: [checkpoint({ thread_id: "x\ud83d\ude00" })], deletes: [] };
    expect(parsePushRequest(push).checkpoints[0]!.thread_id).toBe("x\ud83d\ude00");
    // What MessagePack makes of them: one id, which is why they are refused before encoding.
    expect(decodeBody(encodeBody("x\ud800"))).toBe(decodeBody(encodeBody("x\udbff")));
  });
});

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
