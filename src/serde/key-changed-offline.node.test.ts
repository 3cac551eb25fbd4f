/**
 * A storage instance whose key another tab changed fails with a
 * `KeyChangedError` (serde/protocol.ts `keyChanged`), whose words load with
 * the rare failures (failures.ts); when that chunk cannot load (an offline
 * app missing it), the error keeps its class, in fewer words.
 */
import { afterEach, expect, it, vi } from "vitest";
import { KeyChangedError } from "../core/errors.js";

afterEach(() => {
  vi.doUnmock("./failures.js");
  vi.resetModules();
});

it("is a KeyChangedError with the database's name when its words cannot load", async () => {
  // The Node project shares a worker between files: protocol.js may be loaded already, its chunk with it.
  vi.resetModules();
  vi.doMock("./failures.js", () => {
    throw new Error("Failed to fetch dynamically imported module");
  });
  const { keyChanged } = await import("./protocol.js");
  // The error classes of the modules just loaded (protocol.js checks its cause against them).
  const { DecryptionError } = await import("../core/errors.js");
  const cause = new DecryptionError("the key does not open the new record");
  const error = (await keyChanged("app-db", cause)) as Error;
  // By name: the modules were loaded afresh, so the class is another copy.
  expect(error.name).toBe(KeyChangedError.name);
  expect(error.message).toBe("The key of app-db changed.");
  expect(error.cause).toBe(cause);
});
