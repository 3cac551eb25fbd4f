/**
 * The fixed inputs of the export format version 2 golden (`export-v2.json`),
 * shared by its generator and its test. A version 2 file carries a random
 * export id and a random AES-GCM IV per record; with the clock fixed and
 * `crypto.getRandomValues` replaced by a seeded sequence, an export of the
 * same thread under the same key is the same bytes, so a re-export can be
 * compared byte for byte instead of by decoding only.
 */
import { vi } from "vitest";
import { crc32 } from "../../src/core/crc32.js";

/** The export time: export.json's, so the unencrypted export can be compared with it. */
export const EXPORT2_TIME = "2026-11-30T14:41:18.148Z";

/**
 * Runs `work` with `Date` at {@link EXPORT2_TIME} and `crypto.getRandomValues`
 * filling arrays from a fixed linear congruential sequence (restarted on each
 * call of this function). Open the saver before: only `Date` is faked, but
 * opening is not part of what is compared.
 */
export async function withFixedInputs<T>(work: () => Promise<T>): Promise<T> {
  let state = 0x2026_1130;
  const spy = vi.spyOn(globalThis.crypto, "getRandomValues").mockImplementation(<A extends ArrayBufferView | null>(array: A): A => {
    if (array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let i = 0; i < bytes.length; i++) {
        state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
        bytes[i] = state >>> 24;
      }
    }
    return array;
  });
  vi.useFakeTimers({ toFake: ["Date"], now: new Date(EXPORT2_TIME) });
  try {
    return await work();
  } finally {
    vi.useRealTimers();
    spy.mockRestore();
  }
}

/** The frames of a `.lgthread` file: kind letter and payload. Throws if the last frame does not end the file. */
export function exportFrames(file: Uint8Array): [string, Uint8Array][] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const out: [string, Uint8Array][] = [];
  let offset = 8;
  while (offset < file.length) {
    const length = view.getUint32(offset + 1, false);
    out.push([String.fromCharCode(file[offset]!), file.subarray(offset + 5, offset + 5 + length)]);
    offset += 5 + length;
  }
  if (offset !== file.length) throw new Error(`the last frame ends at ${offset}, the file at ${file.length}`);
  return out;
}

/**
 * A file without its task paths frame (`p`, after the last checkpoint, written
 * from the release that exported task paths on), its trailer's CRC computed
 * again: what the goldens, written before it, hold. Throws unless the frame is
 * there, just before the trailer.
 */
export function withoutTaskPaths(file: Uint8Array): Uint8Array {
  const all = exportFrames(file);
  if (all.at(-2)?.[0] !== "p") throw new Error(`no task paths frame before the trailer: ${all.map(([kind]) => kind).join("")}`);
  const pathsStart = file.length - (5 + all.at(-1)![1].length) - (5 + all.at(-2)![1].length);
  const body = file.subarray(0, pathsStart);
  const trailer = JSON.parse(new TextDecoder().decode(all.at(-1)![1])) as Record<string, unknown>;
  trailer.crc32 = crc32(0, body).toString(16).padStart(8, "0");
  const payload = new TextEncoder().encode(JSON.stringify(trailer));
  const out = new Uint8Array(body.length + 5 + payload.length);
  out.set(body);
  out[body.length] = 0x45;
  new DataView(out.buffer).setUint32(body.length + 1, payload.length);
  out.set(payload, body.length + 5);
  return out;
}
