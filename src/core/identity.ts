/**
 * Identity strings of checkpoints and channel values inside one thread, for
 * sets and maps (the saver's garbage collection, the export format's
 * bookkeeping). Never stored: only compared within one process.
 */

/** A checkpoint's identity inside its thread. */
export function checkpointIdentity(checkpointNs: string, checkpointId: string): string {
  return `${checkpointNs}\u0000${checkpointId}`;
}

/** A channel value's identity inside its thread (the version's type counts: 1 and "1" differ). */
export function blobIdentity(checkpointNs: string, channel: string, version: string | number): string {
  return `${checkpointNs}\u0000${channel}\u0000${typeof version}:${String(version)}`;
}
