/**
 * The bytes a `Date` is written as, pinned on both sides of every MessagePack
 * timestamp form: by `MsgpackSerializer` (checkpoint and store values) and by
 * the crash journal's frames (journal/format.ts). The golden files hold one
 * Date, from 2026, so a writer that changes another range passes them.
 *
 * msgpackr 2.1.4 did: a Date from 2106-02-07 (2^32 s) to 2514-05-30 (2^34 s)
 * became timestamp 64 (`d7 ff`, 10 bytes) where 2.1.3, which wrote every
 * stored row so far, writes timestamp 96 (`c7 0c ff`, 15 bytes). Both read
 * back as the same Date, but the same value would be stored as other bytes:
 * a msgpackr release that fails here changes the stored format and is not
 * taken without a decision (a format version, or the encoder writing the old
 * form itself). Node and Chromium.
 */
import { describe, expect, it } from "vitest";
import { MsgpackSerializer } from "../../src/index.js";
import { FRAME_HEADER, frameRecord, parseJournal } from "../../src/journal/format.js";
import { hex } from "../golden/shared.js";

/** Each Date and the MessagePack bytes it is written as (msgpackr 2.1.3). */
const DATES: readonly { name: string; ms: number; bytes: string }[] = [
  { name: "2017, whole seconds: timestamp 32", ms: 1.5e12, bytes: "d6ff59682f00" },
  {
    name: "2026, milliseconds: timestamp 64",
    ms: Date.UTC(2026, 10, 30, 12, 34, 56, 789),
    bytes: "d7ffbc1cbd006b0d6d70",
  },
  { name: "2106-02-07T06:28:16Z (2^32 s): timestamp 96", ms: 2 ** 32 * 1000, bytes: "c70cff000000000000000100000000" },
  { name: "2200, 5 ms: timestamp 96", ms: Date.UTC(2200, 0, 1, 0, 0, 0, 5), bytes: "c70cff004c4b4000000001b09e1900" },
  {
    name: "the last millisecond before 2^34 s: timestamp 96",
    ms: 2 ** 34 * 1000 - 1,
    bytes: "c70cff3b8b87c000000003ffffffff",
  },
  { name: "2^34 s: timestamp 96", ms: 2 ** 34 * 1000, bytes: "c70cff000000000000000400000000" },
  { name: "1969: timestamp 96", ms: -1000, bytes: "c70cff00000000ffffffffffffffff" },
  { name: "the last Date: timestamp 96", ms: 8.64e15, bytes: "c70cff00000000000007dba8218000" },
];

describe("golden: the bytes of a Date", () => {
  const serde = new MsgpackSerializer();

  it.each(DATES)("MsgpackSerializer writes $name as it did, and reads it back", async ({ ms, bytes }) => {
    const [type, payload] = await serde.dumpsTyped(new Date(ms));
    expect(type).toBe("msgpack");
    expect(hex(payload)).toBe(`c101${bytes}`);
    const read = await serde.loadsTyped("msgpack", fromHex(`c101${bytes}`));
    expect(read).toBeInstanceOf(Date);
    expect((read as Date).getTime()).toBe(ms);
  });

  it.each(DATES)("the journal frames $name as it did, and parses it back", ({ ms, bytes }) => {
    const frame = frameRecord({ at: new Date(ms) });
    // {at: <date>}: a fixmap of one, the key "at", then the Date.
    expect(hex(frame.subarray(FRAME_HEADER))).toBe(`81a26174${bytes}`);
    const parsed = parseJournal(frame);
    expect(parsed.torn).toBe(false);
    expect((parsed.records[0] as { at: Date }).at.getTime()).toBe(ms);
  });
});

function fromHex(text: string): Uint8Array {
  return Uint8Array.from(text.match(/../g)!, (pair) => parseInt(pair, 16));
}
