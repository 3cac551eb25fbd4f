/**
 * `stillVerified`: the deleting transaction of `deleteForRuns` takes a row
 * only if it is still the row checked before (its metadata bytes, and the
 * channel versions of a row holding values inline), so an edit between the
 * check and the delete keeps the row instead of deleting it on an
 * unchecked field.
 */
import { describe, expect, it } from "vitest";
import type { CheckpointRow } from "../rows/shapes.js";
import { rowIdentity, stillVerified, type VerifiedRow } from "./verify-runs.js";

const row = (fields: Partial<CheckpointRow>): CheckpointRow => ({
  thread_id: "t",
  checkpoint_ns: "",
  checkpoint_id: "c2",
  checkpoint: ["msgpack+aesgcm", new Uint8Array([1])],
  metadata: ["msgpack+aesgcm", new Uint8Array([4, 5, 6])],
  channel_versions: { a: 2 },
  created_at: 0,
  ...fields,
});

describe("stillVerified", () => {
  const holder = row({ inline: { a: ["msgpack+aesgcm", new Uint8Array([9])] } });
  const verified = new Map<string, VerifiedRow>([
    [rowIdentity(holder), { metadata: holder.metadata, versions: { a: 2 } }],
  ]);

  it("takes the row checked, unchanged", () => {
    expect(stillVerified(verified, { ...holder })).toBe(true);
    expect(stillVerified(undefined, holder)).toBe(true);
  });

  it("keeps a row holding values inline whose clear versions changed since the check", () => {
    expect(stillVerified(verified, { ...holder, channel_versions: { a: 7 } })).toBe(false);
    expect(stillVerified(verified, { ...holder, channel_versions: { a: 2, b: 1 } })).toBe(false);
  });

  it("keeps a row that holds values inline now but did not when checked, and one whose metadata changed", () => {
    const plainEntry = new Map<string, VerifiedRow>([[rowIdentity(holder), { metadata: holder.metadata }]]);
    expect(stillVerified(plainEntry, holder)).toBe(false);
    expect(stillVerified(plainEntry, { ...holder, inline: undefined })).toBe(true);
    expect(stillVerified(verified, { ...holder, metadata: ["msgpack+aesgcm", new Uint8Array([4, 5, 7])] })).toBe(false);
  });
});
