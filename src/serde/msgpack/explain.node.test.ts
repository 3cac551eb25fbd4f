/**
 * A failed encode names where the value failed; the explanation loads with
 * `import()` only then, and if it cannot load (an offline app missing the
 * chunk), the error still says what could not be stored.
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

  it("still say what could not be stored when the explanation cannot load", async () => {
    vi.doMock("./explain.js", () => {
      throw new Error("Failed to fetch dynamically imported module");
    });
    const { MsgpackSerializer } = await import("./index.js");
    const serde = new MsgpackSerializer();
    const failure = await serde.dumpsTyped(unstorable()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).name).toBe(SerializationError.name);
    expect((failure as Error).message).toBe('MsgpackSerializer cannot store this value: a function ("f")');
    const cycle = await serde.dumpsTyped(circular()).catch((error: unknown) => error);
    expect((cycle as Error).message).toBe(
      "MsgpackSerializer cannot store this value: a circular reference, or a value nested too deeply",
    );
  });
});
