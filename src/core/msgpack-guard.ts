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
 * Bounds on the work of decoding one payload, for bytes from strangers (a
 * sync request body): the byte limit alone does not bound it, since a 16 MiB
 * body may declare millions of map keys, and msgpackr builds an object for
 * each before anyone can look at it.
 */
export interface DecodeLimits {
  /** Values in all, containers' entries included. */
  readonly maxValues: number;
  /** Entries of one map, or items of one array. */
  readonly maxContainer: number;
  /** Containers nested in one another. */
  readonly maxDepth: number;
}

/**
 * Walks the MessagePack value at the start of `bytes` and returns the offset
 * of the first token it refuses (an extension whose type `kinds[type]` marks
 * {@link REFUSED}, a {@link FOLLOWED} type in any form but fixext 1, 0xC1,
 * or, given `limits`, a container past them), else -1.
 * @param kinds What each of the 256 extension type bytes may be.
 * @param limits Bounds on the values the payload may declare.
 * @internal
 */
export function refusedAt(bytes: Uint8Array, kinds: Uint8Array, limits?: DecodeLimits): number {
  let pending = 1; // values still to walk past
  let values = 1;
  // With limits, the values left in each open container, innermost last.
  // Finished containers leave lazily, so one nested in its parent's last
  // slot still counts its parent's level. Without limits nothing is kept:
  // the walk stays O(1) in memory however deep the nesting.
  const open: number[] = [];
  let at = 0;
  // The big-endian unsigned integer in the next `size` bytes. Past the end
  // it reads 0s and the walk stops: msgpackr then reports the truncation.
  const uint = (size: number): number => {
    let value = 0;
    while (size--) value = value * 256 + (bytes[at++] ?? 0);
    return value;
  };
  // A container of `entries` entries holding `slots` values; false when it is past the limits.
  const enter = (entries: number, slots: number): boolean => {
    pending += slots;
    if (!limits || slots === 0) return true;
    values += slots;
    if (entries > limits.maxContainer || values > limits.maxValues || open.length >= limits.maxDepth) return false;
    open.push(slots);
    return true;
  };
  while (pending > 0 && at < bytes.length) {
    pending--;
    if (limits) {
      while (open.length > 0 && open[open.length - 1] === 0) open.pop();
      if (open.length > 0) open[open.length - 1]!--;
    }
    const start = at;
    const token = bytes[at++]!;
    // Positive fixint (0x40-0x7f too: with no record definition they stay integers), negative fixint.
    if (token < 0x80 || token >= 0xe0) continue;
    if (token < 0x90) {
      if (!enter(token & 15, (token & 15) * 2)) return start; // fixmap
    } else if (token < 0xa0) {
      if (!enter(token & 15, token & 15)) return start; // fixarray
    } else if (token < 0xc0)
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
        if (kind === FOLLOWED && !enter(1, 1)) return start; // its data is one filler byte, then one value
      }
      at += length;
    } else if (token >= 0xdc) {
      // array, map 16/32
      const entries = uint(token & 1 ? 4 : 2);
      if (!enter(entries, entries * (token >= 0xde ? 2 : 1))) return start;
    } else if (token === 0xc1) return start;
    else if (token >= 0xca) at += 1 << (token >= 0xcc ? (token - 0xcc) & 3 : token - 0xc8); // float, int
    // else nil, false, true
  }
  return -1;
}
