/**
 * The wipe marker is written in the background after a database's first
 * committed write (seam.ts): a saver closed, and its database deleted with
 * `deleteSaverDatabase`, before that write landed left the marker behind it,
 * and the next saver on the name found "a database emptied after holding
 * data": reported wiped, or, with `onWipe: "throw"`, failed every call.
 * OPFS's file create is slowed here as a busy machine slows it.
 */
import { afterEach, expect, it } from "vitest";
import { deleteSaverDatabase } from "../saver/delete-database.js";
import type { RecoveryReport } from "./index.js";
import { defaultMarker, markerName } from "./wipe-marker.js";
import { config, dbName, removeJournalTestData, saver, tickGraph } from "../../test/support/journal-savers.js";

afterEach(removeJournalTestData);

const directory = FileSystemDirectoryHandle.prototype;
const getFileHandle = directory.getFileHandle;
afterEach(() => {
  directory.getFileHandle = getFileHandle;
});

it.each([
  ["closed", true],
  ["left open (the delete closes its connection)", false],
])(
  "a saver %s just after its first write, then deleteSaverDatabase: no marker is left, the next saver starts as new",
  async (_, close) => {
    const name = dbName();
    let landed: Promise<FileSystemFileHandle> | undefined;
    directory.getFileHandle = function (this: FileSystemDirectoryHandle, file, options) {
      const call = () => getFileHandle.call(this, file, options);
      if (file !== markerName(name) || !options?.create) return call();
      landed = new Promise((resolve) => setTimeout(resolve, 300)).then(call);
      return landed;
    };
    const first = saver(name, { journal: "off" });
    await tickGraph(first, 2).invoke({ count: 0 }, config("t"));
    if (close) await first.close();
    await deleteSaverDatabase(name);
    if (!close) await first.close();
    // The marker's create was asked for; before, it landed here, after the delete had removed what was there.
    expect(landed).toBeDefined();
    await landed;
    expect(await defaultMarker(name).has()).toBe(false);
    const reports: RecoveryReport[] = [];
    const next = saver(name, { journal: "off", onWipe: "throw" }, reports);
    expect(await next.getTuple(config("t"))).toBeUndefined();
    expect(reports[0]).toMatchObject({ kind: "ok", fromEmpty: false });
    await next.close();
  },
);
