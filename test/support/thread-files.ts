/**
 * Hand-made `.lgthread` files for the importer's tests: an unencrypted
 * export decoded, its records edited, and written again with the counts and
 * the checksum an attacker would compute.
 */
import { crc32 } from "../../src/core/crc32.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { FORMAT_INTERNALS } from "../../src/portable/format.js";
import type { BlobRecord, CheckpointRecord, TaskPathsRecord } from "../../src/portable/index.js";

const serde = new MsgpackSerializer();
const { SIGNATURE, KIND, FRAME_HEAD } = FORMAT_INTERNALS;
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** One frame's bytes. */
export function frameBytes(kind: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEAD + payload.length);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, FRAME_HEAD);
  return out;
}

/** A file of the header and these frames, with the trailer an attacker would compute. */
export function assemble(
  header: Record<string, unknown>,
  frames: Uint8Array[],
  counts: Record<string, number>,
): Uint8Array {
  const parts = [SIGNATURE, frameBytes(KIND.HEADER, json({ ...header, counts })), ...frames];
  const body = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  parts.reduce((offset, part) => (body.set(part, offset), offset + part.length), 0);
  const trailer = frameBytes(KIND.END, json({ ...counts, crc32: crc32(0, body).toString(16).padStart(8, "0") }));
  const out = new Uint8Array(body.length + trailer.length);
  out.set(body);
  out.set(trailer, body.length);
  return out;
}

/**
 * `bytes` (an unencrypted export) with its `B` and `C` records changed by
 * `edit` in place: every value first (a `C` record may only use earlier `B`
 * records), then the checkpoints; counts and checksum fixed up. The task
 * paths record (`p`) is handed to `edit` and written after the checkpoints
 * only when `edit` returns one.
 */
export async function rewriteThreadFile(
  bytes: Uint8Array,
  edit: (blobs: BlobRecord[], records: CheckpointRecord[], paths?: TaskPathsRecord) => TaskPathsRecord | void,
): Promise<Uint8Array> {
  const frames: { kind: number; payload: Uint8Array }[] = [];
  for (let offset = SIGNATURE.length; offset < bytes.length;) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
    frames.push({ kind: bytes[offset]!, payload: bytes.subarray(offset + FRAME_HEAD, offset + FRAME_HEAD + length) });
    offset += FRAME_HEAD + length;
  }
  const header = JSON.parse(new TextDecoder().decode(frames[0]!.payload)) as Record<string, unknown>;
  const blobs: BlobRecord[] = [];
  const records: CheckpointRecord[] = [];
  let paths: TaskPathsRecord | undefined;
  for (const { kind, payload } of frames) {
    if (kind === KIND.BLOB) blobs.push((await serde.loadsTyped("msgpack", payload)) as BlobRecord);
    if (kind === KIND.CHECKPOINT) records.push((await serde.loadsTyped("msgpack", payload)) as CheckpointRecord);
    if (kind === KIND.PATHS) paths = (await serde.loadsTyped("msgpack", payload)) as TaskPathsRecord;
  }
  const keptPaths = edit(blobs, records, paths);
  const body: Uint8Array[] = [];
  for (const blob of blobs) body.push(frameBytes(KIND.BLOB, (await serde.dumpsTyped(blob))[1]));
  for (const record of records) body.push(frameBytes(KIND.CHECKPOINT, (await serde.dumpsTyped(record))[1]));
  if (keptPaths) body.push(frameBytes(KIND.PATHS, (await serde.dumpsTyped(keptPaths))[1]));
  const writes = records.reduce((n, record) => n + record.writes.length, 0);
  return assemble(header, body, { checkpoints: records.length, blobs: blobs.length, writes });
}

/** An edit for {@link rewriteThreadFile} mapping every version: channel versions, seen versions, `B` records. */
export function mapVersions(map: (version: number | string) => number | string) {
  return (blobs: BlobRecord[], records: CheckpointRecord[]): void => {
    for (const blob of blobs) blob.version = map(blob.version);
    for (const record of records) {
      const versions = record.checkpoint.channel_versions as Record<string, number | string>;
      for (const channel of Object.keys(versions)) versions[channel] = map(versions[channel]!);
      for (const seen of Object.values(record.checkpoint.versions_seen ?? {})) {
        const mapped = seen as Record<string, number | string>;
        for (const channel of Object.keys(mapped)) mapped[channel] = map(mapped[channel]!);
      }
    }
  };
}
