/**
 * The error for a payload core/msgpack-guard.ts refuses, loaded only when one is met (it
 * never is for bytes this format wrote), so its text costs nothing up front.
 * @module
 */

// What msgpackr would have made of the codes it reads by itself.
const MSGPACKR_CODES: Record<number, string> = {
  0x00: "undefined",
  0x62: "a string bundle",
  0x65: "an Error",
  0x69: "a structured clone reference target",
  0x70: "a structured clone reference",
  0x72: "a record definition",
  0x73: "a Set",
  0x74: "a typed array",
  0x78: "a RegExp",
};

// Where the type byte is after each extension token (fixext 1-16, ext 8/16/32).
const TYPE_OFFSET: Record<number, number> = { 0xc7: 2, 0xc8: 3, 0xc9: 5, 0xd4: 1, 0xd5: 1, 0xd6: 1, 0xd7: 1, 0xd8: 1 };

/**
 * The `SerializationError`'s message for the token at `at` of `payload` (header included).
 * @internal
 */
export function refusalMessage(payload: Uint8Array, at: number): string {
  const token = payload[at]!;
  if (token === 0xc1) {
    return `Refusing a MsgpackSerializer payload with the never-used MessagePack byte 0xc1 at byte ${at}: this format never writes it, so the bytes were crafted or corrupted.`;
  }
  const type = payload[at + TYPE_OFFSET[token]!]!;
  const meaning = MSGPACKR_CODES[type];
  return `Refusing a MsgpackSerializer payload with MessagePack extension type 0x${type.toString(16).padStart(2, "0")}${meaning ? ` (msgpackr's ${meaning})` : ""} at byte ${at}: this format never writes it in this form, so the bytes were crafted or corrupted.`;
}
