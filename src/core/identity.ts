/**
 * Identity strings of checkpoints and channel values inside one thread, for
 * sets and maps (the saver's garbage collection, the export format's
 * bookkeeping, replication), and the one encoding of a channel version as a
 * string that they are built on.
 */

/**
 * A channel version as a string, its type kept: 1 and "1" differ. Also a
 * stored format: the sync server keys its channel values by it in
 * PostgreSQL, so these bytes never change.
 */
export function versionKey(version: string | number): string {
  return typeof version === "number" ? `n:${String(version)}` : `s:${version}`;
}

/** The version that {@link versionKey} made `key` from. */
export function versionFromKey(key: string): string | number {
  return key.startsWith("n:") ? Number(key.slice(2)) : key.slice(2);
}

/** A checkpoint's identity inside its thread. */
export function checkpointIdentity(checkpointNs: string, checkpointId: string): string {
  return `${checkpointNs}\u0000${checkpointId}`;
}

/** A channel value's identity inside its thread. Never stored: only compared within one process. */
export function blobIdentity(checkpointNs: string, channel: string, version: string | number): string {
  return `${checkpointNs}\u0000${channel}\u0000${versionKey(version)}`;
}
