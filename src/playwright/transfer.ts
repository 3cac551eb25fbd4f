/**
 * Moving thread files between Node and the page in bounded pieces. One
 * `page.evaluate` carrying a whole snapshot (two threads of ~50 MB: some
 * 140 MB of base64, copied by the protocol on both sides) crashed the page
 * ("Target page, context or browser has been closed"); pieces of
 * {@link TRANSFER_CHUNK_BYTES} keep every message small, and were faster
 * (70 MB: 16 s in one message, 6.4 s in 8 MiB pieces).
 *
 * This side runs in Node only, so it encodes with `Buffer` (native): the
 * portable `toBase64`/`fromBase64` loops took a tenth of a transfer's Node
 * time. Most of a transfer is the protocol itself (the browser compiles each
 * `page.evaluate` argument as a script literal), not the encoding.
 */
import type { Page } from "playwright";
import { callPage } from "./inject.js";
import type { StagedFile } from "./protocol.js";

/** The most file bytes one `page.evaluate` carries (as base64, a third more). */
export const TRANSFER_CHUNK_BYTES = 8 * 1024 * 1024;

let chunkBytes = TRANSFER_CHUNK_BYTES;

/**
 * Sets the piece size of every later transfer and returns the previous one.
 * Internal (no entry exports it): the kit's own tests move small threads in
 * several pieces with it, so that chunking is tested without files of 8 MiB.
 *
 * @param bytes A whole number of bytes, at least 1.
 */
export function setTransferChunkBytes(bytes: number): number {
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new RangeError(`setTransferChunkBytes: a piece is a whole number of bytes of 1 or more, got ${bytes}.`);
  }
  const previous = chunkBytes;
  chunkBytes = bytes;
  return previous;
}

/** A name for bytes staged in the page, unique enough for one page's concurrent helpers. */
function stagingId(): string {
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/**
 * Copies `bytes` into the page piece by piece and returns the name the page
 * API takes them by (a seed or restore consumes them). On failure, whatever
 * arrived is dropped.
 */
export async function sendBytes(page: Page, helper: string, bytes: Uint8Array): Promise<string> {
  const id = stagingId();
  const piece = chunkBytes;
  try {
    let offset = 0;
    do {
      const end = Math.min(offset + piece, bytes.length);
      const base64 = Buffer.from(bytes.buffer, bytes.byteOffset + offset, end - offset).toString("base64");
      await callPage(page, helper, "stage", id, bytes.length, offset, base64);
      offset = end;
    } while (offset < bytes.length);
    return id;
  } catch (error) {
    await dropStaged(page, helper, [id]);
    throw error;
  }
}

/** Copies a file the page staged (an export) into Node piece by piece, then drops it there. */
export async function receiveBytes(page: Page, helper: string, file: StagedFile): Promise<Uint8Array> {
  const piece = chunkBytes;
  try {
    const bytes = new Uint8Array(file.size);
    for (let offset = 0; offset < file.size; offset += piece) {
      const decoded = Buffer.from(await callPage(page, helper, "unstage", file.id, offset, piece), "base64");
      // Buffer skips what is not base64: a piece of the wrong length is named, not copied.
      const expected = Math.min(piece, file.size - offset);
      if (decoded.length !== expected) {
        throw new Error(
          `${helper}: the page sent ${decoded.length} bytes of its export at offset ${offset}, not ${expected}.`,
        );
      }
      bytes.set(decoded, offset);
    }
    return bytes;
  } finally {
    await dropStaged(page, helper, [file.id]);
  }
}

/** Frees staged files in the page; a closed page has nothing left to free. */
export async function dropStaged(page: Page, helper: string, ids: string[]): Promise<void> {
  if (page.isClosed()) return;
  await callPage(page, helper, "drop", ids).catch(() => undefined);
}
