/**
 * The journal's on-disk format: a file of framed records, each
 * `[length u32 LE][crc32 u32 LE][payload]`, the payload a msgpack value.
 * A record torn by a crash (short, or failing its CRC) ends the file: it and
 * everything after it are ignored, and the next writer truncates them away.
 * So does a record msgpackr cannot read, or one naming a MessagePack
 * extension this encoder never writes (see {@link JOURNAL_EXTENSIONS}): the
 * file lives in OPFS, which anyone who can edit the profile's files can
 * edit, and crafted bytes must not decode to msgpackr's own objects.
 *
 * Payloads (written by active.ts): a header `{ h: generation }` first, then
 * `{ o: ops }` (one committed transaction) or `{ snap: rows }` (a snapshot
 * of the whole database, written by compaction).
 */
import { Packr } from "msgpackr";
import { crc32 } from "../core/crc32.js";
import { RAW, refusedAt } from "../core/msgpack-guard.js";

/** Bytes before each payload. */
export const FRAME_HEADER = 8;

/** Largest payload accepted when reading (a corrupt length must not allocate gigabytes). */
export const MAX_RECORD = 512 * 1024 * 1024;

const packr = new Packr({
  useRecords: false,
  moreTypes: false,
  structuredClone: false,
  mapsAsObjects: true,
  variableMapSize: true,
});

/**
 * The only extension types `packr` writes (`moreTypes: false` turns Sets,
 * Errors, RegExps, typed arrays and ArrayBuffers into plain arrays and bins;
 * no records, no structured-clone references): 0, msgpackr's `undefined`,
 * and -1 (0xff), the timestamp of a `Date`. The saver's own rows hold
 * neither (their values are `[type, bytes]` from the serializer), but the
 * journal knows no schema and a row may: a custom serializer's key record is
 * any object. Both decode to plain values, so reading them is harmless and
 * refusing them would drop a real journal's records on restore. Every other
 * extension, and 0xC1, marks a crafted record.
 */
const JOURNAL_EXTENSIONS = new Uint8Array(256); // REFUSED (0) but for:
JOURNAL_EXTENSIONS[0x00] = JOURNAL_EXTENSIONS[0xff] = RAW;

/** Frames one payload value. */
export function frameRecord(value: unknown): Uint8Array {
  return framePayload(packr.pack(value) as Uint8Array);
}

/** Frames payload bytes as they are (tests craft records byte by byte with it). @internal */
export function framePayload(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, true);
  view.setUint32(4, crc32(0, payload), true);
  out.set(payload, FRAME_HEADER);
  return out;
}

/** The intact records of a journal file, and where the intact part ends. */
export interface ParsedJournal {
  records: unknown[];
  /** Bytes of intact records: a torn tail starts here. */
  validLength: number;
  /** True when bytes after `validLength` were ignored (a torn or corrupt record). */
  torn: boolean;
}

/**
 * Parses a journal file, stopping at the first torn or corrupt record (short,
 * failing its CRC, not MessagePack, naming an extension the journal never
 * writes, or refused by `accept`, given each decoded record and its index):
 * the records before it are returned, it and the rest are not.
 */
export function parseJournal(
  bytes: Uint8Array,
  accept: (record: unknown, index: number) => boolean = () => true,
): ParsedJournal {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: unknown[] = [];
  let offset = 0;
  while (offset + FRAME_HEADER <= bytes.length) {
    const length = view.getUint32(offset, true);
    const crc = view.getUint32(offset + 4, true);
    const start = offset + FRAME_HEADER;
    if (length > MAX_RECORD || start + length > bytes.length) break;
    const payload = bytes.subarray(start, start + length);
    if (crc32(0, payload) !== crc) break;
    // Crafted, not torn (its CRC holds): corrupt all the same, so it ends the file.
    if (refusedAt(payload, JOURNAL_EXTENSIONS) >= 0) break;
    let value: unknown;
    try {
      value = normalize(packr.unpack(payload));
    } catch {
      break;
    }
    // A record of a shape the journal never writes: as corrupt as the rest.
    if (!accept(value, records.length)) break;
    records.push(value);
    offset = start + length;
  }
  return { records, validLength: offset, torn: offset < bytes.length };
}

/**
 * Node's msgpackr hands back Buffers; IndexedDB rows must hold plain
 * Uint8Arrays (what the saver wrote), so copy them into their own buffers.
 */
function normalize(value: unknown): unknown {
  if (value instanceof Uint8Array) {
    return value.constructor === Uint8Array && value.byteOffset === 0 && value.byteLength === value.buffer.byteLength
      ? value
      : new Uint8Array(value);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = normalize(value[i]);
    return value;
  }
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) record[key] = normalize(record[key]);
    return record;
  }
  return value;
}
