/**
 * Journal records as someone editing the journal file would write them:
 * framed with a valid CRC around MessagePack bytes given in hex.
 */
import { framePayload } from "../../src/journal/format.js";

/** Bytes as lowercase hex. */
export const hex = (bytes: Uint8Array): string => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

/** Hex (spaces allowed) as bytes. */
export const fromHex = (text: string): Uint8Array =>
  Uint8Array.from(text.replace(/\s+/g, "").match(/../g) ?? [], (pair) => parseInt(pair, 16));

/** A MessagePack fixstr (under 32 bytes), as hex. */
export function str(text: string): string {
  const bytes = new TextEncoder().encode(text);
  return (0xa0 | bytes.length).toString(16) + hex(bytes);
}

/** The record `{ o: [["meta", 0, { name: "planted", value }]] }`, its value the MessagePack bytes `valueHex`. */
export const planted = (valueHex: string): Uint8Array =>
  framePayload(
    fromHex(`81 ${str("o")} 91 93 ${str("meta")} 00 82 ${str("name")} ${str("planted")} ${str("value")} ${valueHex}`),
  );
