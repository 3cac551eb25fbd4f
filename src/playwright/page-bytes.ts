/**
 * Base64 for the pieces of a transfer (transfer.ts), inside the page: the
 * browser's own `Uint8Array.fromBase64` and `toBase64` where it has them
 * (Chromium 140, Firefox 133, Safari 18.2), else the portable loops of
 * core/bytes.ts. A piece is 8 MiB; the loops, with the strict decoder's
 * checks, cost the page a tenth of a second or more per piece under load.
 */
import { fromBase64, toBase64 } from "../core/bytes.js";

/** The ES2026 base64 methods, where the browser has them. */
interface NativeBase64 {
  fromBase64?: (text: string) => Uint8Array;
}

/** The bytes of a piece Node sent. */
export function pieceBytes(base64: string): Uint8Array {
  const native = (Uint8Array as NativeBase64).fromBase64;
  return native ? native.call(Uint8Array, base64) : fromBase64(base64);
}

/** A piece of a staged file, for Node to fetch. */
export function pieceBase64(bytes: Uint8Array): string {
  const native = (bytes as Uint8Array & { toBase64?: () => string }).toBase64;
  return native ? native.call(bytes) : toBase64(bytes);
}
