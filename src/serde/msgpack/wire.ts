/**
 * The MessagePack wire format of `MsgpackSerializer`: the payload header,
 * every extension type code, the msgpackr options, and the one place that
 * registers extensions with msgpackr (lazily, once, on first use).
 *
 * Why one module: msgpackr keeps its extension registry in module-global
 * state shared by every Packr/Unpackr in the page, so registering at import
 * time would be a side effect (the package is `sideEffects: false`) and two
 * places registering codes could silently disagree. Everything that decides
 * what the bytes look like lives here; `encoder.ts` only lowers values to
 * the wire shapes below, and `revival.ts` revives them.
 *
 * Payload layout (format version 1):
 *
 *     0xC1 0x01 <one MessagePack value>
 *
 * `0xC1` is the one byte the MessagePack spec never uses, so a payload that
 * starts with it can never be mistaken for plain MessagePack (for example a
 * Python `JsonPlusSerializer` row, also tagged `"msgpack"`, which starts with
 * a valid MessagePack token). The second byte is the format version; a
 * reader refuses versions it does not know instead of guessing.
 *
 * Extension codes (all written as `fixext1(code, 0x00)` followed by the
 * payload value, msgpackr's "write/read" style, except UNDEFINED and
 * NEGATIVE_ZERO which carry no payload):
 *
 * | code | value | payload |
 * |---|---|---|
 * | 7 | `DeltaSnapshot` | its `value` (Python's code for it; see below) |
 * | 48 | `undefined` | none |
 * | 49 | `-0` | none |
 * | 50 | `Map` | flat array `[k1, v1, k2, v2, …]` |
 * | 51 | `Set` | array of members |
 * | 52 | `Error` (any subclass) | `{name, message, stack?, cause?, errors?, props?}` |
 * | 53 | `RegExp` | `[source, flags]` |
 * | 54 | LangChain `Serializable` | its `lc: 1` constructor record (`toJSON()`) |
 * | 58 | the same, when the record holds values JSON cannot carry | the record |
 * | 55 | class registered with `types` | `[name, data]` |
 * | 56 | plain object with an own `__proto__` key | flat array `[k1, v1, …]` |
 * | 57 | typed array (not Uint8Array), `ArrayBuffer`, `DataView` | `[constructor name, bin]` |
 * | 59 | a string with a lone surrogate (an object key too) | `bin`: its UTF-16 code units, little-endian |
 *
 * 59 exists because MessagePack strings are UTF-8, which has no lone
 * surrogates: msgpackr wrote each as U+FFFD, so a string cut between the two
 * halves of an emoji (a streamed token, a truncated text) came back changed,
 * silently. Written only for such strings (well-formed ones stay MessagePack
 * strings, byte for byte as before); a reader from before it refuses the
 * extension as unknown instead of reading a changed string. An object with
 * such a key is written as 56, its keys as values.
 *
 * 58 exists because records are revived through `load()`, which takes JSON:
 * a record with `undefined`, `NaN`, `±Infinity`, `-0` or a `bigint` inside
 * needs a slower exact path, and the writer already knows which records do.
 *
 * Native MessagePack/msgpackr types carry the rest: `Uint8Array` as `bin`,
 * `Date` as the timestamp extension (-1, millisecond-exact), `bigint` as
 * int64/uint64 (and msgpackr's ext 0x42 beyond 64 bits), NaN/±Infinity as
 * float64. Codes 0-6 are Python's (`JsonPlusSerializer` msgpack) and never
 * written: msgpackr's own `undefined` is ext 0, hence code 48. Code 7 keeps
 * Python's meaning, DeltaSnapshot, but not its layout (Python embeds the
 * packed value in the extension data, we write it after the tag); the 0xC1
 * header keeps the two formats apart. 66 (0x42) and 98-127 belong to msgpackr.
 *
 * @module
 */
import { addExtension, Packr, RESET_BUFFER_MODE, Unpackr, type Options } from "msgpackr";
import { SerializationError } from "../../core/errors.js";
import { FOLLOWED, RAW, refusedAt } from "../../core/msgpack-guard.js";

/** First payload byte: never a valid MessagePack token (see module docs). */
export const FORMAT_MAGIC = 0xc1;

/** Second payload byte: the layout and extension table above. */
export const FORMAT_VERSION = 1;

/** Bytes before the MessagePack value. */
export const HEADER_LENGTH = 2;

/**
 * Extension type codes. Stable forever once written to a user's disk: never
 * renumber, only add (and bump {@link FORMAT_VERSION} if a meaning changes).
 */
export const EXT = {
  DELTA_SNAPSHOT: 7,
  UNDEFINED: 48,
  NEGATIVE_ZERO: 49,
  MAP: 50,
  SET: 51,
  ERROR: 52,
  REGEXP: 53,
  LC: 54,
  CLASS: 55,
  PROTO_OBJECT: 56,
  BINARY: 57,
  LC_EXACT: 58,
  UTF16: 59,
} as const;

/** Codes whose extension is followed by a payload value (all but UNDEFINED and NEGATIVE_ZERO). */
export type PayloadCode = Exclude<(typeof EXT)[keyof typeof EXT], typeof EXT.UNDEFINED | typeof EXT.NEGATIVE_ZERO>;

const PAYLOAD_CODES: readonly PayloadCode[] = [
  EXT.DELTA_SNAPSHOT,
  EXT.MAP,
  EXT.SET,
  EXT.ERROR,
  EXT.REGEXP,
  EXT.LC,
  EXT.CLASS,
  EXT.PROTO_OBJECT,
  EXT.BINARY,
  EXT.LC_EXACT,
  EXT.UTF16,
];

/**
 * What each extension type byte may be on read (see core/msgpack-guard.ts):
 * ours, plus the two of msgpackr's we write, the timestamp (-1, for `Date`)
 * and 0x42 (bigints beyond 64 bits). Every other type is refused.
 */
const EXTENSION_KINDS = new Uint8Array(256);
for (const code of PAYLOAD_CODES) EXTENSION_KINDS[code] = FOLLOWED;
for (const code of [EXT.UNDEFINED, EXT.NEGATIVE_ZERO, 0x42, 0xff]) EXTENSION_KINDS[code] = RAW;

/**
 * Packr options; they shape the bytes, so they are fixed here.
 * - `useRecords: false`: plain MessagePack maps. Records are msgpackr's
 *   structure extension ("r", 0x72); its reader compiles each structure with
 *   `new Function`, which a strict Content-Security-Policy forbids. Without
 *   records no structure reader is ever created.
 * - `structuredClone: false`: no reference extensions; cycles are rejected
 *   before packing instead.
 * - `moreTypes: false`: every typed array would otherwise get msgpackr's ext
 *   0x74, and in Node a plain Uint8Array too (only Buffer stays `bin`), so the
 *   bytes would differ between Node and browsers. Set/Error/RegExp use our
 *   codes, which also keep what msgpackr's drop (stack, own fields).
 * - `useBigIntExtension`: bigints beyond 64 bits as ext 0x42, not a RangeError.
 * - `variableMapSize`: fixmap/map16/map32 by size, so objects with more than
 *   65535 keys still pack (the fast path throws) and small maps are smaller.
 * - `useToJSON: false`, `encodeUndefinedAsNil: false`: the encoder has lowered
 *   every class instance and `undefined` already; these only pin behaviour.
 */
function packOptions(): Options {
  return {
    useRecords: false,
    structuredClone: false,
    moreTypes: false,
    useBigIntExtension: true,
    variableMapSize: true,
    useToJSON: false,
    encodeUndefinedAsNil: false,
    useFloat32: 0,
    bundleStrings: false,
  };
}

/**
 * Unpackr options.
 * - `useRecords: false`, no `structures`: bytes 0x40-0x7f are integers, never
 *   record references, so no reader is compiled (see {@link packOptions}).
 *   msgpackr still honours an explicit record definition (fixext 0x72) in
 *   the bytes whatever the options; we never write one, and
 *   core/msgpack-guard.ts refuses it (with every other extension we never
 *   write) before msgpackr reads.
 * - `structuredClone: false`: msgpackr's reference extensions (0x69, 0x70)
 *   are refused by msgpackr too (unless this is `false`, not merely unset, it
 *   honours them), a second lock behind core/msgpack-guard.ts.
 * - `mapsAsObjects`: maps are plain objects; real `Map`s carry {@link EXT.MAP}.
 * - `copyBuffers`: each decoded `Uint8Array` owns its bytes instead of being a
 *   view that keeps the whole stored row alive. Answers from memory decode
 *   the kept bytes themselves on this ground (saver/fresh-rows.ts).
 * - `int64AsType: "bigint"`: int64/uint64 only ever come from a bigint (the
 *   packer writes numbers as 32-bit ints or float64).
 */
function unpackOptions(): Options {
  return {
    useRecords: false,
    structuredClone: false,
    mapsAsObjects: true,
    copyBuffers: true,
    int64AsType: "bigint",
  };
}

/**
 * A value the encoder has lowered to `payload`, written as extension `code`
 * followed by the payload. msgpackr chooses an extension by `instanceof`, so
 * each code has its own (module-private) subclass; no other code in the page
 * can create these, which keeps the global registration from touching other
 * msgpackr users' values.
 * @internal
 */
export class Tagged {
  constructor(readonly payload: unknown) {}
}

// One class per code; defining classes is not a side effect.
const TAGGED_CLASSES = new Map<PayloadCode, new (payload: unknown) => Tagged>(
  PAYLOAD_CODES.map((code) => [code, class extends Tagged {}]),
);

/**
 * Wraps a lowered payload for extension `code`.
 * @internal
 */
export function tagged(code: PayloadCode, payload: unknown): Tagged {
  const TaggedClass = TAGGED_CLASSES.get(code)!;
  return new TaggedClass(payload);
}

/**
 * Whether MessagePack's UTF-8 carries `text` exactly: no lone surrogate
 * (ES2024's `isWellFormed`: Node 20, Chrome 111, Firefox 119, Safari 16.4;
 * constant time for the strings V8 stores one byte per character).
 * @internal
 */
export function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** `text`'s UTF-16 code units, little-endian ({@link EXT.UTF16}'s payload). @internal */
export function utf16Bytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    bytes[2 * i] = unit & 0xff;
    bytes[2 * i + 1] = unit >> 8;
  }
  return bytes;
}

/** The string {@link utf16Bytes} wrote; undefined for bytes it cannot have written. @internal */
export function fromUtf16Bytes(bytes: unknown): string | undefined {
  if (!(bytes instanceof Uint8Array) || bytes.length % 2 !== 0) return undefined;
  // Native, where a string built one code unit at a time took ten times as
  // long as writing and ~17 bytes of heap per unit. The decoder writes
  // U+FFFD for each lone surrogate (one unit for one; ignoreBOM keeps a
  // leading U+FEFF): those units are put back from the bytes.
  return new TextDecoder("utf-16le", { ignoreBOM: true })
    .decode(bytes)
    .replace(/\ufffd/g, (_, i: number) => String.fromCharCode(bytes[2 * i]! | (bytes[2 * i + 1]! << 8)));
}

class UndefinedMarker {}
class NegativeZeroMarker {}

/** Stands for `undefined` in a lowered value (msgpackr would write ext 0). @internal */
export const UNDEFINED_MARKER: object = new UndefinedMarker();

/** Stands for `-0` in a lowered value (msgpackr would write the integer 0). @internal */
export const NEGATIVE_ZERO_MARKER: object = new NegativeZeroMarker();

/**
 * Receives every payload extension while {@link unpackPayload} runs. msgpackr
 * calls extension readers with no reference to the Unpackr, so the reader of
 * the serializer that is decoding is kept in {@link activeReader}.
 * @internal
 */
export interface ExtensionReader {
  /** Builds the value for extension `code` from its decoded payload. */
  read(code: PayloadCode, payload: unknown): unknown;
}

let activeReader: ExtensionReader | null = null;

/** The msgpackr extension shape we use (its .d.ts types `pack` too narrowly). */
interface MsgpackrExtension {
  Class: new (...args: never[]) => unknown;
  type: number;
  write?: (value: never) => unknown;
  read?: (payload: unknown) => unknown;
  pack?: () => Uint8Array;
  unpack?: (data: Uint8Array) => unknown;
}

let codec: { packr: Packr; unpackr: Unpackr } | undefined;

/**
 * Registers the extensions with msgpackr's global registry the first time a
 * payload is packed or unpacked, and builds the shared Packr/Unpackr.
 *
 * The registry is global, so this runs once per page whatever the number of
 * serializers; per-serializer behaviour (registered app classes) lives in the
 * encoder and in the {@link ExtensionReader} passed to {@link unpackPayload}.
 * Another library that registers msgpackr codes 7 or 48-58 in the same page
 * would collide with these; msgpackr offers no way to scope codes.
 */
function getCodec(): { packr: Packr; unpackr: Unpackr } {
  if (codec) return codec;
  const extensions: MsgpackrExtension[] = PAYLOAD_CODES.map((code) => ({
    Class: TAGGED_CLASSES.get(code)!,
    type: code,
    write: (value: Tagged) => value.payload,
    read: (payload: unknown) => {
      if (!activeReader) {
        throw new SerializationError(
          `MessagePack extension ${code} belongs to MsgpackSerializer (langgraph-checkpoint-indexeddb); decode it with MsgpackSerializer.loadsTyped.`,
        );
      }
      return activeReader.read(code, payload);
    },
  }));
  // A one-byte payload makes msgpackr write `fixext1(code, 0x00)`.
  const noPayload = new Uint8Array(1);
  extensions.push(
    { Class: UndefinedMarker, type: EXT.UNDEFINED, pack: () => noPayload, unpack: () => undefined },
    { Class: NegativeZeroMarker, type: EXT.NEGATIVE_ZERO, pack: () => noPayload, unpack: () => -0 },
  );
  for (const extension of extensions) {
    addExtension(extension as unknown as Parameters<typeof addExtension>[0]);
  }
  codec = { packr: new Packr(packOptions()), unpackr: new Unpackr(unpackOptions()) };
  return codec;
}

/**
 * Packs a lowered value into a fresh payload with the format header.
 *
 * msgpackr returns a view into its shared (and in Node, pooled) buffer;
 * copying out gives every row its own exactly-sized `ArrayBuffer`, which
 * matters because IndexedDB stores a view's whole underlying buffer.
 * Since the view is copied at once, msgpackr is told to write the next pack
 * where this one started (`RESET_BUFFER_MODE`): by default each pack goes
 * on after the last and a new 8 KiB buffer is allocated whenever less than
 * 2 KiB is left, which made packing a 600-character string 2-3× slower in
 * Chromium (every few puts paid an allocation, and the collector the rest).
 * Views other packs returned lie before this pack's start and stay intact.
 * @internal
 */
export function packPayload(lowered: unknown): Uint8Array {
  const body = getCodec().packr.pack(lowered, RESET_BUFFER_MODE);
  const payload = new Uint8Array(HEADER_LENGTH + body.length);
  payload[0] = FORMAT_MAGIC;
  payload[1] = FORMAT_VERSION;
  payload.set(body, HEADER_LENGTH);
  return payload;
}

/**
 * Thrown by {@link unpackPayload} for a token core/msgpack-guard.ts refuses;
 * the caller builds the error with refusal.ts, loaded only then.
 * @internal
 */
export class RefusedToken {
  /** @param at Offset of the token in the payload (header included). */
  constructor(readonly at: number) {}
}

/**
 * Checks the header and unpacks the value, sending every payload extension to
 * `reader`. Throws {@link SerializationError} for a foreign header, an
 * unknown version; throws {@link RefusedToken} for an extension this format
 * never writes (core/msgpack-guard.ts); msgpackr's own errors (truncated or
 * corrupt bytes) are thrown as they are, for the caller to wrap.
 * @internal
 */
export function unpackPayload(data: Uint8Array, reader: ExtensionReader): unknown {
  if (data.length < HEADER_LENGTH || data[0] !== FORMAT_MAGIC) {
    throw new SerializationError(
      "This is not a MsgpackSerializer payload (it does not start with the 0xC1 format marker): it was written by another serializer or is corrupt.",
    );
  }
  if (data[1] !== FORMAT_VERSION) {
    throw new SerializationError(
      `This payload uses MsgpackSerializer format version ${data[1]}, but this version of langgraph-checkpoint-indexeddb only reads version ${FORMAT_VERSION}. Upgrade the package to read it.`,
    );
  }
  // A plain Uint8Array view (never a Node Buffer), so copied `bin` values are
  // plain Uint8Arrays too.
  const body = new Uint8Array(data.buffer, data.byteOffset + HEADER_LENGTH, data.length - HEADER_LENGTH);
  const refused = refusedAt(body, EXTENSION_KINDS);
  if (refused >= 0) throw new RefusedToken(HEADER_LENGTH + refused);
  const { unpackr } = getCodec();
  const previous = activeReader;
  activeReader = reader;
  try {
    return unpackr.unpack(body);
  } finally {
    activeReader = previous;
  }
}
