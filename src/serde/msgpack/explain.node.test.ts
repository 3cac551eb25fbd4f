/**
 * A failed encode names where the value failed; the explanation loads with
 * `import()` only then, and if it cannot load (an offline app missing the
 * chunk), the encode still fails with a SerializationError.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SerializationError } from "../../core/errors.js";

afterEach(() => {
  vi.doUnmock("./explain.js");
  vi.doUnmock("../failures.js");
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

  it("word every refusal as they always have (the words load with the explanation)", async () => {
    const { MsgpackSerializer } = await import("./index.js");
    const serde = new MsgpackSerializer();
    class Plain {
      x = 1;
    }
    class WithJson {
      toJSON() {
        return {};
      }
    }
    // LangChain look-alikes: `lc_serializable` and toJSON(), with records load() could not revive.
    class NotSerializable {
      lc_serializable = false;
      toJSON() {
        return { lc: 1, type: "not_implemented", id: ["x"] };
      }
    }
    class Foreign {
      lc_serializable = true;
      toJSON() {
        return { lc: 1, type: "constructor", id: ["my_pkg", "Thing"], kwargs: {} };
      }
    }
    const cases: Array<[unknown, string]> = [
      [{ f: () => 1 }, 'a function ("f") at $.f.'],
      [[function () {}], "a function (anonymous) at $[0]."],
      [{ s: Symbol("k") }, "a symbol (Symbol(k)) at $.s."],
      [
        { p: new Plain() },
        "an instance of class Plain at $.p. It would come back as a plain object: register it with new MsgpackSerializer({ types: [Plain] }) to keep it a Plain, or store plain data.",
      ],
      [
        [new WithJson()],
        "an instance of class WithJson at $[0]. It would come back as a plain object: register it with new MsgpackSerializer({ types: [WithJson] }) to keep it a WithJson, or store plain data. It has toJSON(): store value.toJSON() yourself if that plain shape is what you want.",
      ],
      [
        { m: new NotSerializable() },
        'a LangChain NotSerializable whose toJSON() gives a "not_implemented" record at $.m. Its lc_serializable is false, so load() could not revive it: register the class with types, or store plain data.',
      ],
      [
        { m: new Foreign() },
        "a LangChain Foreign with id my_pkg/Thing at $.m. load() only revives langchain_core and langchain classes: register the class with types instead.",
      ],
    ];
    for (const [value, words] of cases) {
      await expect(serde.dumpsTyped(value)).rejects.toThrow(`MsgpackSerializer cannot store ${words}`);
    }
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

  it("refuse a crafted payload with a SerializationError when the words cannot load", async () => {
    vi.doMock("../failures.js", () => {
      throw new Error("Failed to fetch dynamically imported module");
    });
    const { MsgpackSerializer } = await import("./index.js");
    const { FORMAT_MAGIC, FORMAT_VERSION } = await import("./wire.js");
    // Our header, then msgpackr's undefined (ext 0), which the guard refuses.
    const crafted = new Uint8Array([FORMAT_MAGIC, FORMAT_VERSION, 0xd4, 0x00, 0x00]);
    const failure = await new MsgpackSerializer().loadsTyped("msgpack", crafted).catch((error: unknown) => error);
    expect((failure as Error).name).toBe(SerializationError.name);
    expect((failure as Error).message).toMatch(/^MsgpackSerializer refused this payload \(byte \d+\)\.$/);
  });
});
