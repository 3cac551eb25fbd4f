/**
 * A failed encode names where the value failed; the explanation loads with
 * `import()` only then, and if it cannot load (an offline app missing the
 * chunk), the encode still fails with a SerializationError.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SerializationError } from "../../core/errors.js";

afterEach(() => {
  vi.doUnmock("./explain.js");
  vi.resetModules();
});

const unstorable = () => ({ a: [1, { f() {} }] });
const circular = () => {
  const value: Record<string, unknown> = { b: {} };
  (value.b as Record<string, unknown>).back = value;
  return value;
};

describe("MsgpackSerializer encode errors", () => {
  it("name the path of the value, or the cycle", async () => {
    const { MsgpackSerializer } = await import("./index.js");
    const serde = new MsgpackSerializer();
    await expect(serde.dumpsTyped(unstorable())).rejects.toThrow(/cannot store a function \("f"\) at \$\.a\[1\]\.f/);
    await expect(serde.dumpsTyped(circular())).rejects.toThrow(/circular reference: \$\.b\.back refers back/);
  });

  it("still fail with a SerializationError when the explanation cannot load", async () => {
    vi.doMock("./explain.js", () => {
      throw new Error("Failed to fetch dynamically imported module");
    });
    const { MsgpackSerializer } = await import("./index.js");
    const serde = new MsgpackSerializer();
    for (const value of [unstorable(), circular()]) {
      const failure = await serde.dumpsTyped(value).catch((error: unknown) => error);
      // By name: the modules were loaded afresh, so the class is another copy.
      expect((failure as Error).name).toBe(SerializationError.name);
      expect((failure as Error).message).toBe("MsgpackSerializer cannot store this value (why could not be told).");
    }
  });
});
