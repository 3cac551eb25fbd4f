/**
 * CRC-32 (IEEE 802.3, as zlib's `crc32`), the checksum of export files and
 * journal records.
 */

/** The lookup table (reflected polynomial 0xEDB88320), built on first use. */
let crcTable: Uint32Array | undefined;

/** CRC-32 of `bytes`, continuing from `crc` (0 to start). */
export function crc32(crc: number, bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = (crc ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
