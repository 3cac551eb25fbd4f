/**
 * Every error class the package exports is named on its prototype, as
 * exported: an app's minifier renames classes, so a name taken from the
 * class (`new.target.name`) read "t" in production builds, in logs and in
 * `error.name` checks (seen with Vite's minified build of an app).
 */
import { describe, expect, it } from "vitest";
import * as root from "../../src/index.js";
import * as store from "../../src/store.js";
import * as sync from "../../src/sync.js";
import * as serde from "../../src/serde.js";
import * as runs from "../../src/runs.js";
import * as journal from "../../src/journal.js";
import { DecryptionError, IndexedDBCheckpointError } from "../../src/index.js";

const errorClasses = Object.entries({ ...root, ...store, ...sync, ...serde, ...runs, ...journal }).filter(
  (entry): entry is [string, typeof IndexedDBCheckpointError] =>
    typeof entry[1] === "function" && entry[1].prototype instanceof Error,
);

describe("error names", () => {
  it("finds the package's error classes", () => {
    expect(errorClasses.map(([name]) => name)).toEqual(
      expect.arrayContaining(["DecryptionError", "KeyChangedError", "ThreadFileError", "ThreadBusyError", "SyncError"]),
    );
  });

  it.each(errorClasses.filter(([, Class]) => Class.prototype instanceof IndexedDBCheckpointError))(
    "%s is named on its prototype, whatever a minifier calls the class",
    (name, Class) => {
      expect(Object.hasOwn(Class.prototype, "name")).toBe(true);
      expect(Class.prototype.name).toBe(name);
    },
  );

  it("an instance reads its name, and its stack and string start with it", () => {
    const error = new DecryptionError("wrong key", { cause: "x" });
    expect(error.name).toBe("DecryptionError");
    expect(String(error)).toBe("DecryptionError: wrong key");
    expect(error.cause).toBe("x");
    expect(error.stack?.startsWith("DecryptionError: wrong key")).toBe(true);
  });

  it("an app's own subclass names itself", () => {
    class AppError extends DecryptionError {
      override name = "AppError";
    }
    expect(new AppError("m").name).toBe("AppError");
    expect(new AppError("m")).toBeInstanceOf(DecryptionError);
  });
});
