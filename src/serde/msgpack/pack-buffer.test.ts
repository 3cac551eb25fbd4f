/**
 * Where msgpackr packs: every Packr of the page shares one buffer, and a
 * payload is copied out of it at once (wire.ts `packPayload`), so a payload
 * leaves the buffer where it found it instead of using up room that later
 * packs pay for with a new buffer. Runs in Node and Chromium.
 */
import { Packr, RESET_BUFFER_MODE } from "msgpackr";
import { describe, expect, it } from "vitest";
import { MsgpackSerializer } from "./index.js";

describe("msgpackr's shared buffer", () => {
  it("is where it was after a payload is packed: the next pack starts at the same place", async () => {
    const serde = new MsgpackSerializer();
    const probe = new Packr();
    const values = ["x".repeat(600), { role: "user", content: "y".repeat(600) }, [1, 2, 3]];
    for (const value of values) {
      // The probe's own pack goes back to its start; it also moves to a new buffer first when
      // less than 2 KiB is left, so the payload below always fits where the probe packed.
      const before = probe.pack(1, RESET_BUFFER_MODE);
      const [, payload] = await serde.dumpsTyped(value);
      const after = probe.pack(1, RESET_BUFFER_MODE);
      expect(payload.byteLength).toBeGreaterThan(2);
      expect(after.buffer).toBe(before.buffer);
      expect(after.byteOffset).toBe(before.byteOffset);
    }
  });

  it("still gives every payload its own bytes, which later packs do not change", async () => {
    const serde = new MsgpackSerializer();
    const [, first] = await serde.dumpsTyped("a".repeat(600));
    const copy = first.slice();
    await serde.dumpsTyped("b".repeat(600));
    new Packr().pack("c".repeat(600));
    expect(first).toEqual(copy);
    expect(first.byteOffset).toBe(0);
    expect(first.buffer.byteLength).toBe(first.byteLength);
    expect(await serde.loadsTyped("msgpack", first)).toBe("a".repeat(600));
  });
});
