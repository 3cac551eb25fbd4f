/**
 * The package's entry points: the root entry exports what an app uses
 * (every name of the design's public API included), and the plumbing for
 * extending the package lives in subpaths instead: `./serde`, `./runs`,
 * `./journal`. Runtime names only: types leave no trace at run time.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as root from "../../src/index.js";
import * as journal from "../../src/journal.js";
import * as runs from "../../src/runs.js";
import * as serde from "../../src/serde.js";

/** The runtime names of the root entry that the design names as the public API. */
const DESIGN_NAMES = [
  "IndexedDBSaver",
  "IndexedDBStore",
  "MsgpackSerializer",
  "EncryptedSerializer",
  "importThread",
  "copyThreads",
  "exportThread",
  "runOnThread",
  "isThreadRunning",
  "ThreadBusyError",
  "IndexedDBCheckpointError",
  "DatabaseBlockedError",
  "DatabaseClosedError",
  "DecryptionError",
  "SerializationError",
];

describe("package entries", () => {
  it("the root entry keeps every name of the public API", () => {
    expect(Object.keys(root)).toEqual(expect.arrayContaining(DESIGN_NAMES));
  });

  it("the root entry leaves the plumbing to subpaths", () => {
    const plumbing = [...Object.keys(serde), ...Object.keys(runs), ...Object.keys(journal)];
    expect(plumbing.sort()).toEqual([
      "AES_GCM_SUFFIX",
      "MemoryJournalBackend",
      "inspectEnvelope",
      "runChannelName",
      "runLockName",
    ]);
    expect(Object.keys(root).filter((name) => plumbing.includes(name))).toEqual([]);
  });

  it("every subpath of package.json's exports is built from an entry module of src/", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      exports: Record<string, string | { types: string; import: string }>;
    };
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (subpath === "./package.json") continue;
      const name = subpath === "." ? "index" : subpath.slice(2);
      expect(target, subpath).toEqual({ types: `./dist/${name}.d.ts`, import: `./dist/${name}.js` });
      expect(() => readFileSync(new URL(`../../src/${name}.ts`, import.meta.url)), subpath).not.toThrow();
    }
    expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining(["./serde", "./runs", "./journal"]));
  });
});
