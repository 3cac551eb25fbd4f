/** `loadOnce`: one load for every call, and a failed load tried again. */
import { describe, expect, it } from "vitest";
import { loadOnce } from "./tasks.js";

describe("loadOnce", () => {
  it("loads once for every call, concurrent or later", async () => {
    let loads = 0;
    const load = loadOnce(async () => ({ n: ++loads }));
    const [a, b] = await Promise.all([load(), load()]);
    expect(await load()).toBe(a);
    expect(b).toBe(a);
    expect(loads).toBe(1);
  });

  it("forgets a failed load: the next call loads again (a chunk that could not be fetched while offline)", async () => {
    let loads = 0;
    const load = loadOnce(async () => {
      loads += 1;
      if (loads === 1) throw new TypeError("Failed to fetch dynamically imported module");
      return "module";
    });
    await expect(load()).rejects.toThrow("Failed to fetch");
    expect(await load()).toBe("module");
    expect(await load()).toBe("module");
    expect(loads).toBe(2);
  });
});
