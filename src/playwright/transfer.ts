/**
 * Moving thread files between Node and the page in bounded pieces. One
 * `page.evaluate` carrying a whole snapshot (two threads of ~50 MB: some
 * 140 MB of base64, copied by the protocol on both sides) crashed the page
 * ("Target page, context or browser has been closed"); pieces of
 * {@link TRANSFER_CHUNK_BYTES} keep every message small, and were faster
 * (70 MB: 16 s in one message, 6.4 s in 8 MiB pieces).
 */
import type { Page } from "playwright";
import { fromBase64, toBase64 } from "../core/bytes.js";
import { callPage } from "./inject.js";
import type { StagedFile } from "./protocol.js";

/** The most file bytes one `page.evaluate` carries (as base64, a third more). */
export const TRANSFER_CHUNK_BYTES = 8 * 1024 * 1024;

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
  try {
    let offset = 0;
    do {
      const piece = bytes.subarray(offset, offset + TRANSFER_CHUNK_BYTES);
      await callPage(page, helper, "stage", id, bytes.length, offset, toBase64(piece));
      offset += piece.length;
    } while (offset < bytes.length);
    return id;
  } catch (error) {
    await dropStaged(page, helper, [id]);
    throw error;
  }
}

/** Copies a file the page staged (an export) into Node piece by piece, then drops it there. */
export async function receiveBytes(page: Page, helper: string, file: StagedFile): Promise<Uint8Array> {
  try {
    const bytes = new Uint8Array(file.size);
    for (let offset = 0; offset < file.size; offset += TRANSFER_CHUNK_BYTES) {
      bytes.set(fromBase64(await callPage(page, helper, "unstage", file.id, offset, TRANSFER_CHUNK_BYTES)), offset);
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
