/**
 * The version key is the one string encoding of a channel version, and the
 * sync server stores it in PostgreSQL: its bytes are pinned here.
 */
import { describe, expect, it } from "vitest";
import { blobIdentity, checkpointIdentity, versionFromKey, versionKey } from "./identity.js";

describe("versionKey", () => {
  it("keeps the bytes the sync server stores", () => {
    expect(versionKey(1)).toBe("n:1");
    expect(versionKey(3.0000000009313226)).toBe("n:3.0000000009313226");
    expect(versionKey("1")).toBe("s:1");
    expect(versionKey("00000000000000000000000000000002.0.5")).toBe("s:00000000000000000000000000000002.0.5");
    expect(versionKey("")).toBe("s:");
    expect(versionKey("n:1")).toBe("s:n:1");
  });

  it("reads back what it wrote, type included", () => {
    for (const version of [0, 1, 7.25, 3.0000000009313226, "1", "", "n:1", "s:x"]) {
      expect(versionFromKey(versionKey(version))).toStrictEqual(version);
    }
  });

  it('tells 1 and "1" apart in the identities built on it', () => {
    expect(blobIdentity("", "messages", 1)).not.toBe(blobIdentity("", "messages", "1"));
    expect(blobIdentity("ns", "c", 2)).toBe("ns\u0000c\u0000n:2");
    expect(checkpointIdentity("ns", "id")).toBe("ns\u0000id");
  });
});
