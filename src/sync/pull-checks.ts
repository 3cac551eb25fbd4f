/**
 * The deletes a pull applies: another device's removal
 * of a checkpoint (its prune or deleteForRuns) or delete of a thread up to
 * an id moves the values a deleted row holds inline (row format 2) to blob
 * rows, by that row's clear channel versions, for the checkpoints left. An
 * edited version would leave such a value behind, lost with its row; so,
 * as `deleteForRuns` and `prune` do (saver/verify-runs.ts), those versions
 * are checked against the row's own checkpoint (sealed, under encryption)
 * before the pulled page's transaction, which cannot decode. The rows a removal names are read and
 * checked first. A deleted row the transaction meets unchecked (one a
 * delete up to an id reaches while newer rows stay, or a row changed since
 * it was checked) aborts it: that row is checked, and the page applied again.
 */
import type { SaverRawAccess } from "../saver/raw-access.js";
import type { SaverStoreName } from "../saver/schema.js";
import type { WriteTx } from "../saver/tombstones.js";
import { checkInlineVersions, inlineChecked, type CheckedVersions } from "../saver/verify-runs.js";
import type { CheckpointRow } from "../rows/shapes.js";
import type { WireChange } from "./protocol.js";

/** How often a page is applied, each time with the rows met unchecked checked, before the round fails. */
const ATTEMPTS = 4;

/** What one run of the page's transaction is given to check the rows it deletes. */
export interface DeleteChecks {
  /** Notes a row about to be deleted (`keepUsedInline`'s check). */
  see: (row: CheckpointRow) => void;
  /** Throws, aborting the transaction, if a row it saw holds values inline and was not checked as it is. */
  settle: () => void;
}

/** Aborts a page's transaction that met deleted rows not checked yet, to check them and apply it again. */
class Unchecked extends Error {
  constructor(readonly rows: CheckpointRow[]) {
    super(
      `${rows.length} checkpoint rows a pulled delete reaches changed while they were checked; the next sync round applies it again.`,
    );
  }
}

/**
 * Runs `work` in one write of `access` (the page's transaction), with the
 * checks of the rows the deletes of `changes` reach: fresh for each run of
 * `work`, and undefined when there is nothing to check (no delete in the
 * page, or a serializer that authenticates nothing). A row whose versions
 * do not match its sealed checkpoint fails with a `DecryptionError` naming
 * it, and nothing of the page is applied.
 */
export async function writeChecked<R>(
  access: SaverRawAccess,
  changes: readonly WireChange[],
  stores: SaverStoreName[],
  work: (tx: WriteTx, check: DeleteChecks | undefined) => Promise<R>,
  action: string,
): Promise<R> {
  const write = (checked?: CheckedVersions) =>
    access.write(stores, (tx) => work(tx, checked && checksOf(checked)), action);
  if (changes.every((change) => change.kind === "checkpoint")) return write();
  const serde = await access.serde();
  const checked = await checkInlineVersions(serde, await removedRows(access, changes));
  for (let attempt = 1; ; attempt++) {
    try {
      return await write(checked);
    } catch (error) {
      if (!(error instanceof Unchecked) || attempt === ATTEMPTS) throw error;
      await checkInlineVersions(serde, error.rows, checked);
    }
  }
}

/** The checks of one run of the transaction, against the rows `checked`. */
function checksOf(checked: CheckedVersions): DeleteChecks {
  const unchecked: CheckpointRow[] = [];
  return {
    see: (row) => {
      if (!inlineChecked(checked, row)) unchecked.push(row);
    },
    settle: () => {
      if (unchecked.length > 0) throw new Unchecked(unchecked);
    },
  };
}

/** The local rows the page's removals name (those stored). */
async function removedRows(access: SaverRawAccess, changes: readonly WireChange[]): Promise<CheckpointRow[]> {
  const keys = changes.flatMap((change): [string, string, string][] =>
    change.kind === "removed"
      ? [[change.removed.thread_id, change.removed.checkpoint_ns, change.removed.checkpoint_id]]
      : [],
  );
  if (keys.length === 0) return [];
  const rows = await access.db.read(
    ["checkpoints"],
    (tx) => Promise.all(keys.map((key) => tx.objectStore("checkpoints").get(key))),
    "read the checkpoints a pull removes",
  );
  return rows.filter((row) => row !== undefined);
}
