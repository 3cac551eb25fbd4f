/**
 * Refuses, before msgpackr reads a payload, every extension its format never
 * writes. Shared by every reader of MessagePack this package writes itself:
 * MsgpackSerializer payloads (serde/msgpack/wire.ts), sync request bodies
 * (sync/protocol.ts) and the crash journal's records (journal/format.ts),
 * each with its own allow-list (the `kinds` table of {@link refusedAt}). It
 * lives in core/ because it imports nothing and the journal may not import
 * serde/.
 *
 * Why a scan and not an Unpackr option: msgpackr's extension table is
 * module-global and keeps its own readers in it (0x65 Error, 0x73 Set, 0x74
 * typed arrays, 0x78 RegExp, 0x62 bundled strings, 0x69/0x70 structured-clone
 * references, 0 `undefined`), and it reads a record definition (fixext 0x72,
 * after which bytes 0x40-0x7f stand for records) before it even looks at
 * that table. Overwriting those entries would change how every other
 * msgpackr user in the page decodes, and no Unpackr option turns them off
 * (only the two reference codes obey `structuredClone: false`). So the bytes
 * are walked once, without building anything, and a payload naming any
 * other extension, or the never-used byte 0xC1 (which msgpackr decodes to
 * an internal marker object), is refused before a single value is created
 * (the caller says how: an error, or a corrupt journal record). The walk is
 * iterative, so crafted nesting cannot overflow the stack here; truncated
 * bytes are left to msgpackr to report.
 * @module
 */
/** An extension type {@link refusedAt} refuses. */
export const REFUSED = 0;
/** An extension type whose data is raw bytes, in any ext/fixext size. */
export const RAW = 1;
/** An extension type written as `fixext1(type, 0)` followed by one payload value. */
export const FOLLOWED = 2;

/**
 * Walks the MessagePack value at the start of `bytes` and returns the offset
 * of the first token it refuses (an extension whose type `kinds[type]` marks
 * {@link REFUSED}, a {@link FOLLOWED} type in any form but fixext 1, or 0xC1),
 * else -1.
 * @param kinds What each of the 256 extension type bytes may be.
 * @internal
 */
export function refusedAt(bytes: Uint8Array, kinds: Uint8Array): number {
  let pending = 1; // values still to walk past
  let at = 0;
  // The big-endian unsigned integer in the next `size` bytes. Past the end
  // it reads 0s and the walk stops: msgpackr then reports the truncation.
  const uint = (size: number): number => {
    let value = 0;
    while (size--) value = value * 256 + (bytes[at++] ?? 0);
    return value;
  };
  while (pending > 0 && at < bytes.length) {
    pending--;
    const start = at;
    const token = bytes[at++]!;
    // Positive fixint (0x40-0x7f too: with no record definition they stay integers), negative fixint.
    if (token < 0x80 || token >= 0xe0) continue;
    if (token < 0x90)
      pending += (token & 15) * 2; // fixmap
    else if (token < 0xa0)
      pending += token & 15; // fixarray
    else if (token < 0xc0)
      at += token & 31; // fixstr
    else if ((token >= 0xc4 && token <= 0xc9) || (token >= 0xd4 && token <= 0xdb)) {
      // bin, ext and str 8/16/32 (a length of 1, 2 or 4 bytes), fixext 1/2/4/8/16
      const fixext = token >= 0xd4 && token <= 0xd8;
      const length = fixext
        ? 1 << (token - 0xd4)
        : uint(1 << (token - (token < 0xc7 ? 0xc4 : token < 0xd9 ? 0xc7 : 0xd9)));
      if (fixext || (token >= 0xc7 && token <= 0xc9)) {
        // The type byte (0x72 in fixext 1/2 is msgpackr's record definition).
        const kind = kinds[bytes[at++]!];
        if (kind === REFUSED || (kind === FOLLOWED && token !== 0xd4)) return start;
        if (kind === FOLLOWED) pending++; // its data is one filler byte
      }
      at += length;
    } else if (token >= 0xdc) {
      pending += uint(token & 1 ? 4 : 2) * (token >= 0xde ? 2 : 1); // array, map 16/32
    } else if (token === 0xc1) return start;
    else if (token >= 0xca) at += 1 << (token >= 0xcc ? (token - 0xcc) & 3 : token - 0xc8); // float, int
    // else nil, false, true
  }
  return -1;
}
