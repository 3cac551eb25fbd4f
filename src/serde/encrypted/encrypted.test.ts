/**
 * EncryptedSerializer on its own (no IndexedDBSaver): round trips, the
 * envelope, every way a value must fail to decrypt, the key factories, the
 * database key protocol (forDatabase, rewrap, rekey) and a LangGraph graph on
 * MemorySaver. Runs in Node (Node's WebCrypto) and in Chromium.
 */
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { JsonPlusSerializer, MemorySaver, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph/web";
import { describe, expect, it } from "vitest";
import type { KeyRecord, DatabaseBinding, RowBoundSerializer, RowRef } from "../protocol.js";
import { changeDatabaseKey, rekeyDatabase, type KeyRecordAccess, type ValueRewriter } from "../rekey.js";

import {
  AES_GCM_SUFFIX,
  DEFAULT_PBKDF2_ITERATIONS,
  EncryptedSerializer,
  inspectEnvelope,
  type AesGcmKeyRecord,
} from "./index.js";
import { DecryptionError } from "../../core/errors.js";
import { deleteDatabase, freshDbName } from "../../../test/support/databases.js";
import { containsText } from "../../../test/support/plaintext.js";
import { sameClone } from "../../core/equality.js";
import { toHex, toBase64, fromBase64 } from "../../core/bytes.js";

/** Fast PBKDF2 for tests; one test below runs the real default. */
const FAST = 1_000;
const SALT = "encrypted.test salt";
const MARKER = "MARKER-7f3a9c-secret";

const json = () => new JsonPlusSerializer();
const fromPass = (
  passphrase: string,
  options: Partial<Parameters<typeof EncryptedSerializer.fromPassphrase>[1]> = {},
) =>
  EncryptedSerializer.fromPassphrase(passphrase, {
    salt: SALT,
    iterations: FAST,
    insecureTestOnlyWeakKdf: true,
    serde: json(),
    ...options,
  });
const rawKey = (fill: number, length = 32) => new Uint8Array(length).fill(fill);

/** The row-bound serializer a database binding hands out. */
const rowSerde = (binding: DatabaseBinding) => binding.serde as RowBoundSerializer;

/** Resolves to the DecryptionError `promise` rejects with (fails the test otherwise). */
async function decryptionError(promise: Promise<unknown>): Promise<DecryptionError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DecryptionError);
  return error as DecryptionError;
}

const VALUES: [string, unknown][] = [
  ["a string", `hello ${MARKER}`],
  ["an empty string", ""],
  ["unicode", "héllo wörld ✓ 🎉 \u0000"],
  ["a number", 42.5],
  ["a negative integer", -7],
  ["true", true],
  ["null", null],
  ["an empty object", {}],
  ["an empty array", []],
  ["nested data", { a: [1, { b: "c", d: [null, true] }], e: { f: { g: "deep" } } }],
  ["undefined inside an object", { present: 1, missing: undefined }],
  ["top-level bytes", new Uint8Array([0, 1, 2, 253, 254, 255])],
  ["nested bytes", { blob: new Uint8Array([9, 8, 7]) }],
  [
    "a Map",
    new Map<string, unknown>([
      ["k", 1],
      ["j", { x: 2 }],
    ]),
  ],
  ["a Set", new Set([1, "two", 3])],
  ["a large string (1 MiB)", "x".repeat(1 << 20)],
  ["a HumanMessage", new HumanMessage({ content: `hi ${MARKER}`, id: "m1" })],
  [
    "an AIMessage with tool calls",
    new AIMessage({
      content: "",
      id: "m2",
      tool_calls: [{ name: "search", args: { q: MARKER }, id: "call-1", type: "tool_call" }],
    }),
  ],
  ["a ToolMessage", new ToolMessage({ content: "result", tool_call_id: "call-1", id: "m3" })],
  ["a list of messages", [new HumanMessage("one"), new AIMessage("two")]],
];

describe("EncryptedSerializer: round trips", () => {
  it.each(VALUES)("round-trips %s through JsonPlusSerializer", async (_name, value) => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(1), { serde: json() });
    const [type, data] = await serde.dumpsTyped(value);
    const [plainType] = await json().dumpsTyped(value);
    expect(type).toBe(`${plainType}${AES_GCM_SUFFIX}`);
    expect(await serde.loadsTyped(type, data)).toEqual(await json().loadsTyped(...(await json().dumpsTyped(value))));
  });

  it.each(VALUES)("round-trips %s through the default inner serializer (MsgpackSerializer)", async (_name, value) => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(1));
    const [type, data] = await serde.dumpsTyped(value);
    expect(type.endsWith(AES_GCM_SUFFIX)).toBe(true);
    expect(await serde.loadsTyped(type, data)).toEqual(value);
  });

  it("round-trips through the row API, and keeps messages as message instances", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(2), { serde: json() });
    const row: RowRef = ["blob", "thread", "", "messages", 3.25];
    const message = new AIMessage({ content: "x", tool_calls: [{ name: "t", args: {}, id: "c", type: "tool_call" }] });
    const [type, data] = await serde.dumpsTypedForRow([message], row);
    const [loaded] = (await serde.loadsTypedForRow(type, data, row)) as [AIMessage];
    expect(loaded).toBeInstanceOf(AIMessage);
    expect(loaded.tool_calls?.[0]?.name).toBe("t");
  });

  it("uses the type tag <inner>+aes-gcm, never +aes", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(1), { serde: json() });
    expect((await serde.dumpsTyped({ a: 1 }))[0]).toBe("json+aes-gcm");
    expect((await serde.dumpsTyped(new Uint8Array([1])))[0]).toBe("bytes+aes-gcm");
    expect((await (await EncryptedSerializer.fromRawKey(rawKey(1))).dumpsTyped({ a: 1 }))[0]).toBe("msgpack+aes-gcm");
  });
});

describe("EncryptedSerializer: envelope", () => {
  it("lays out version, binding, key id, inner type, IV, ciphertext and tag as documented", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(3), { serde: json() });
    const [, inner] = await json().dumpsTyped({ hello: "world" });
    const [, data] = await serde.dumpsTyped({ hello: "world" });
    const keyId = await serde.keyId();
    expect(keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(data[0]).toBe(1); // format version
    expect(data[1]).toBe(0); // bound to the fixed context
    expect(toHex(data.subarray(2, 10))).toBe(keyId);
    expect(data[10]).toBe(4); // "json".length
    expect(new TextDecoder().decode(data.subarray(11, 15))).toBe("json");
    expect(data.length).toBe(11 + 4 + 12 + inner.length + 16);
    expect(inspectEnvelope(data)).toEqual({ version: 1, innerType: "json", keyId, binding: "context" });
    const [, rowData] = await serde.dumpsTypedForRow(1, ["metadata", "t", "", "c"]);
    expect(rowData[1]).toBe(1);
    expect(inspectEnvelope(rowData)?.binding).toBe("row");
  });

  it("uses a fresh random IV for every value", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(3), { serde: json() });
    const ivs = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const [, data] = await serde.dumpsTyped("same value");
      ivs.add(toBase64(data.subarray(15, 27)));
    }
    expect(ivs.size).toBe(50);
  });

  it("does not contain the plaintext", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(3), { serde: json() });
    const [, data] = await serde.dumpsTyped({ note: MARKER, nested: [MARKER] });
    expect(containsText(data, MARKER)).toBe(false);
    expect(containsText((await json().dumpsTyped({ note: MARKER }))[1], MARKER)).toBe(true);
  });
});

describe("EncryptedSerializer: fails closed", () => {
  it("rejects every single flipped bit with DecryptionError, and still reads the original", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(4), { serde: json() });
    const row: RowRef = ["write", "t", "", "c", "task", 0];
    const [type, data] = await serde.dumpsTypedForRow({ v: 1 }, row);
    for (let bit = 0; bit < data.length * 8; bit++) {
      const flipped = data.slice();
      flipped[bit >> 3]! ^= 1 << (bit & 7);
      await decryptionError(serde.loadsTypedForRow(type, flipped, row));
    }
    expect(await serde.loadsTypedForRow(type, data, row)).toEqual({ v: 1 });
  });

  it("rejects truncated, extended, empty and unknown-version envelopes", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(4), { serde: json() });
    const [type, data] = await serde.dumpsTyped("x");
    await decryptionError(serde.loadsTyped(type, data.subarray(0, data.length - 1)));
    await decryptionError(serde.loadsTyped(type, new Uint8Array([...data, 0])));
    await decryptionError(serde.loadsTyped(type, new Uint8Array(0)));
    const v2 = data.slice();
    v2[0] = 2;
    expect((await decryptionError(serde.loadsTyped(type, v2))).message).toMatch(/version 2 is unknown/);
    await decryptionError(serde.loadsTyped(type, toBase64(data)));
  });

  it("rejects a changed type tag", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(4), { serde: json() });
    const [, data] = await serde.dumpsTyped(new Uint8Array([1, 2, 3]));
    expect((await decryptionError(serde.loadsTyped("json+aes-gcm", data))).message).toMatch(/type tag/);
  });

  it("reports a value sealed under another key as such", async () => {
    const a = await EncryptedSerializer.fromRawKey(rawKey(5), { serde: json() });
    const b = await EncryptedSerializer.fromRawKey(rawKey(6), { serde: json() });
    const [type, data] = await a.dumpsTyped({ secret: MARKER });
    const error = await decryptionError(b.loadsTyped(type, data));
    expect(error.message).toMatch(/another key/);
    expect(error.message).toContain(await a.keyId());
  });

  it("rejects a wrong passphrase, another salt and other iterations", async () => {
    const right = await fromPass("correct horse");
    const [type, data] = await right.dumpsTyped({ secret: MARKER });
    await decryptionError((await fromPass("wrong horse")).loadsTyped(type, data));
    await decryptionError((await fromPass("correct horse", { salt: "another salt" })).loadsTyped(type, data));
    await decryptionError((await fromPass("correct horse", { iterations: FAST + 1 })).loadsTyped(type, data));
    expect(await (await fromPass("correct horse")).loadsTyped(type, data)).toEqual({ secret: MARKER });
    const saltBytes = new TextEncoder().encode(SALT);
    expect(await (await fromPass("correct horse", { salt: saltBytes })).loadsTyped(type, data)).toEqual({
      secret: MARKER,
    });
  });

  it("binds row values to their row (associated data)", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(7), { serde: json() });
    const rowA: RowRef = ["checkpoint", "thread-a", "", "cp-1"];
    const [type, data] = await serde.dumpsTypedForRow({ secret: MARKER }, rowA);
    expect(await serde.loadsTypedForRow(type, data, ["checkpoint", "thread-a", "", "cp-1"])).toEqual({
      secret: MARKER,
    });
    const others: RowRef[] = [
      ["checkpoint", "thread-b", "", "cp-1"],
      ["checkpoint", "thread-a", "", "cp-2"],
      ["checkpoint", "thread-a", "ns", "cp-1"],
      ["metadata", "thread-a", "", "cp-1"],
      ["checkpoint", "thread-a", "", "cp-1", 0],
      ["checkpoint", "thread-a", ""],
      ["checkpoint", "thread-", "a", "cp-1"], // same characters, other split
      ["checkpoint", "thread-a", "", "\uD800cp-1"],
    ];
    for (const row of others) {
      expect((await decryptionError(serde.loadsTypedForRow(type, data, row))).message).toMatch(/authentication failed/);
    }
    const [numType, numData] = await serde.dumpsTypedForRow(1, ["write", "t", "", "c", "task", 1]);
    await decryptionError(serde.loadsTypedForRow(numType, numData, ["write", "t", "", "c", "task", "1"]));
    await decryptionError(serde.loadsTypedForRow(numType, numData, ["write", "t", "", "c", "task", 1.5]));
    // Lone surrogates must not collapse (they would under UTF-8 encoding).
    const [sType, sData] = await serde.dumpsTypedForRow(1, ["blob", "\uD800", "", "c", 1]);
    await decryptionError(serde.loadsTypedForRow(sType, sData, ["blob", "\uDFFF", "", "c", 1]));
  });

  it("keeps row-bound and context-bound values apart, and contexts apart", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(7), { serde: json() });
    const [rowType, rowData] = await serde.dumpsTypedForRow(1, ["blob", "t", "", "c", 1]);
    expect((await decryptionError(serde.loadsTyped(rowType, rowData))).message).toMatch(/for a row/);
    const [ctxType, ctxData] = await serde.dumpsTyped(1);
    expect(
      (await decryptionError(serde.loadsTypedForRow(ctxType, ctxData, ["blob", "t", "", "c", 1]))).message,
    ).toMatch(/without a row/);
    const appA = await EncryptedSerializer.fromRawKey(rawKey(7), { serde: json(), context: "app-a" });
    const appB = await EncryptedSerializer.fromRawKey(rawKey(7), { serde: json(), context: "app-b" });
    const [type, data] = await appA.dumpsTyped({ x: 1 });
    await decryptionError(appB.loadsTyped(type, data));
    await decryptionError(serde.loadsTyped(type, data));
    expect(await appA.loadsTyped(type, data)).toEqual({ x: 1 });
  });

  it("refuses plaintext unless allowPlaintext, and never reads another scheme's ciphertext", async () => {
    const strict = await EncryptedSerializer.fromRawKey(rawKey(8), { serde: json() });
    const lenient = await EncryptedSerializer.fromRawKey(rawKey(8), { serde: json(), allowPlaintext: true });
    const [plainType, plainData] = await json().dumpsTyped({ legacy: true });
    expect((await decryptionError(strict.loadsTyped(plainType, plainData))).message).toMatch(/allowPlaintext/);
    await decryptionError(strict.loadsTypedForRow(plainType, plainData, ["metadata", "t", "", "c"]));
    await decryptionError(strict.loadsTyped("json", '{"legacy":true}'));
    expect(await lenient.loadsTyped(plainType, plainData)).toEqual({ legacy: true });
    expect(await lenient.loadsTypedForRow(plainType, plainData, ["metadata", "t", "", "c"])).toEqual({ legacy: true });
    // Python's EAX format, and anything else with a "+": never passed to the inner serde.
    expect((await decryptionError(lenient.loadsTyped("json+aes", plainData))).message).toMatch(/Python/);
    await decryptionError(lenient.loadsTyped("msgpack+chacha", plainData));
    // Writes are always encrypted, even when plaintext is allowed.
    expect((await lenient.dumpsTyped({ a: 1 }))[0]).toBe("json+aes-gcm");
  });

  it('opens its envelopes when a saver dropped the type tag (MemorySaver loads everything as "json")', async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(9), { serde: json() });
    const [, data] = await serde.dumpsTyped(new Uint8Array([1, 2, 3]));
    expect(await serde.loadsTyped("json", data)).toEqual(new Uint8Array([1, 2, 3]));
    const flipped = data.slice();
    flipped[data.length - 1]! ^= 1;
    await decryptionError(serde.loadsTyped("json", flipped));
    const other = await EncryptedSerializer.fromRawKey(rawKey(10), { serde: json() });
    expect((await decryptionError(other.loadsTyped("json", data))).message).toMatch(/another key/);
  });
});

describe("EncryptedSerializer: keys", () => {
  it("fromRawKey takes 16 or 32 bytes, or their base64", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const a = await EncryptedSerializer.fromRawKey(bytes, { serde: json() });
    const b = await EncryptedSerializer.fromRawKey(toBase64(bytes), { serde: json() });
    const c = await EncryptedSerializer.fromRawKey(
      toBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
      { serde: json() },
    );
    const d = await EncryptedSerializer.fromRawKey(bytes.buffer, { serde: json() });
    expect(await b.keyId()).toBe(await a.keyId());
    expect(await c.keyId()).toBe(await a.keyId());
    expect(await d.keyId()).toBe(await a.keyId());
    const [type, data] = await a.dumpsTyped({ x: MARKER });
    expect(await b.loadsTyped(type, data)).toEqual({ x: MARKER });

    const aes128 = await EncryptedSerializer.fromRawKey(rawKey(11, 16), { serde: json() });
    const [t128, d128] = await aes128.dumpsTyped("short key");
    expect(await (await EncryptedSerializer.fromRawKey(rawKey(11, 16), { serde: json() })).loadsTyped(t128, d128)).toBe(
      "short key",
    );
    await decryptionError(
      (await EncryptedSerializer.fromRawKey(rawKey(11, 32), { serde: json() })).loadsTyped(t128, d128),
    );
  });

  it("fromRawKey refuses other sizes (AES-192 included) and bad base64", async () => {
    await expect(EncryptedSerializer.fromRawKey(new Uint8Array(24))).rejects.toThrow(/AES-192/);
    await expect(EncryptedSerializer.fromRawKey(new Uint8Array(0))).rejects.toThrow(/16 or 32 bytes/);
    await expect(EncryptedSerializer.fromRawKey(new Uint8Array(31))).rejects.toThrow(/16 or 32 bytes/);
    await expect(EncryptedSerializer.fromRawKey("not base64!")).rejects.toThrow(/base64/);
    await expect(EncryptedSerializer.fromRawKey(toBase64(new Uint8Array(20)))).rejects.toThrow(/16 or 32 bytes/);
  });

  it("base64 helpers are exact", () => {
    for (let n = 0; n < 40; n++) {
      const bytes = crypto.getRandomValues(new Uint8Array(n));
      expect(toBase64(bytes)).toBe(btoa(String.fromCharCode(...bytes)));
      expect(fromBase64(toBase64(bytes))).toEqual(bytes);
    }
  });

  it("fromPassphrase checks its arguments and normalizes the passphrase (NFC)", async () => {
    await expect(EncryptedSerializer.fromPassphrase("", { salt: SALT })).rejects.toThrow(/non-empty/);
    await expect(EncryptedSerializer.fromPassphrase("p", { salt: "" })).rejects.toThrow(/salt/);
    await expect(EncryptedSerializer.fromPassphrase("p", {} as { salt: string })).rejects.toThrow(/salt/);
    await expect(EncryptedSerializer.fromPassphrase("p", { salt: SALT, iterations: 0 })).rejects.toThrow(/iterations/);
    const composed = await fromPass("caf\u00e9");
    const decomposed = await fromPass("cafe\u0301");
    expect(await decomposed.keyId()).toBe(await composed.keyId());
  });

  it(`fromPassphrase uses PBKDF2-HMAC-SHA256 with ${DEFAULT_PBKDF2_ITERATIONS} iterations by default`, async () => {
    expect(DEFAULT_PBKDF2_ITERATIONS).toBeGreaterThanOrEqual(600_000);
    const passphrase = "the default is slow on purpose";
    const serde = await EncryptedSerializer.fromPassphrase(passphrase, { salt: SALT, serde: json() });
    const material = await crypto.subtle.importKey("raw", new TextEncoder().encode(passphrase), "PBKDF2", false, [
      "deriveBits",
    ]);
    const bits = await crypto.subtle.deriveBits(
      { name: "PBKDF2", hash: "SHA-256", salt: new TextEncoder().encode(SALT), iterations: 600_000 },
      material,
      256,
    );
    const expected = await EncryptedSerializer.fromRawKey(new Uint8Array(bits), { serde: json() });
    expect(await serde.keyId()).toBe(await expected.keyId());
  });

  it("generateKey makes a non-extractable AES-GCM-256 key that survives IndexedDB (structured clone)", async () => {
    const key = await EncryptedSerializer.generateKey();
    expect(key.extractable).toBe(false);
    expect(key.algorithm).toMatchObject({ name: "AES-GCM", length: 256 });
    await expect(crypto.subtle.exportKey("raw", key)).rejects.toThrow();
    const serde = EncryptedSerializer.fromKey(key, { serde: json() });
    const [type, data] = await serde.dumpsTyped({ secret: MARKER });

    const dbName = freshDbName("encrypted-key");
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(dbName, 1);
      request.onupgradeneeded = () => request.result.createObjectStore("keys");
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        const tx = db.transaction("keys", "readwrite");
        tx.objectStore("keys").put(key, "main");
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(tx.error);
      });
      const restored = await new Promise<CryptoKey>((resolve, reject) => {
        const request = db.transaction("keys").objectStore("keys").get("main");
        request.onsuccess = () => resolve(request.result as CryptoKey);
        request.onerror = () => reject(request.error);
      });
      expect(restored).not.toBe(key);
      expect(restored.extractable).toBe(false);
      await expect(crypto.subtle.exportKey("raw", restored)).rejects.toThrow();
      const reloaded = EncryptedSerializer.fromKey(restored, { serde: json() });
      expect(await reloaded.keyId()).toBe(await serde.keyId());
      expect(await reloaded.loadsTyped(type, data)).toEqual({ secret: MARKER });
    } finally {
      db.close();
      await deleteDatabase(dbName);
    }
  });

  it("fromKey refuses keys it cannot use", async () => {
    const hmac = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    expect(() => EncryptedSerializer.fromKey(hmac)).toThrow(/AES-GCM/);
    const wrapOnly = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["wrapKey", "unwrapKey"]);
    expect(() => EncryptedSerializer.fromKey(wrapOnly)).toThrow(/encrypt/);
    expect(() => EncryptedSerializer.fromKey(null as unknown as CryptoKey)).toThrow(/AES-GCM/);
  });

  it("rejects an inner serde that is not a SerializerProtocol", async () => {
    await expect(EncryptedSerializer.fromRawKey(rawKey(1), { serde: {} as SerializerProtocol })).rejects.toThrow(
      /SerializerProtocol/,
    );
  });
});

describe("EncryptedSerializer: database keys (forDatabase, rewrapFor, rekey)", () => {
  const row: RowRef = ["blob", "t", "", "messages", 1];

  it("makes a wrapped data key for a fresh database and reopens it from the record", async () => {
    const serde = await fromPass("pass");
    const fresh = await serde.forDatabase(undefined);
    const record = fresh.record as AesGcmKeyRecord;
    expect(record).toMatchObject({ kind: "aes-gcm", v: 1, kek: await serde.keyId() });
    expect(record.keys).toHaveLength(1);
    // The record holds no secret and survives structured clone (it lives in IndexedDB).
    const stored = structuredClone(record);
    const [type, data] = await rowSerde(fresh).dumpsTypedForRow({ secret: MARKER }, row);
    // Rows are sealed by the data key, not by the passphrase key.
    expect(inspectEnvelope(data)?.keyId).toBe(record.keys[0]!.id);
    expect(record.keys[0]!.id).not.toBe(record.kek);

    const reopened = await (await fromPass("pass")).forDatabase(stored);
    expect(reopened.record).toBeUndefined();
    expect(await rowSerde(reopened).loadsTypedForRow(type, data, row)).toEqual({ secret: MARKER });
    // The passphrase key alone (no database record) cannot read database rows.
    expect((await decryptionError(serde.loadsTypedForRow(type, data, row))).message).toMatch(/another key/);
  });

  it("fails a wrong passphrase in forDatabase, before any row is read", async () => {
    const record = (await (await fromPass("pass")).forDatabase(undefined)).record!;
    const error = await decryptionError((await fromPass("not the pass")).forDatabase(record));
    expect(error.message).toMatch(/Wrong passphrase or key/);
  });

  it("fails an altered key record", async () => {
    const serde = await fromPass("pass");
    const record = (await serde.forDatabase(undefined)).record as AesGcmKeyRecord;
    const entry = record.keys[0]!;
    const flipped = entry.wrapped.slice();
    flipped[3]! ^= 0x10;
    await decryptionError(serde.forDatabase({ ...record, keys: [{ ...entry, wrapped: flipped }] }));
    await decryptionError(serde.forDatabase({ ...record, keys: [{ ...entry, id: "0".repeat(16) }] }));
    await decryptionError(serde.forDatabase({ ...record, kek: "0".repeat(16) }));
    await decryptionError(serde.forDatabase({ ...record, v: 2 } as unknown as KeyRecord));
    await decryptionError(serde.forDatabase({ ...record, keys: [] }));
    expect((await decryptionError(serde.forDatabase({ kind: "other" }))).message).toMatch(/"other"/);
  });

  it("works with a user key that has only encrypt/decrypt usages (wraps through encrypt)", async () => {
    const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    const serde = EncryptedSerializer.fromKey(key, { serde: json() });
    const fresh = await serde.forDatabase(undefined);
    const [type, data] = await rowSerde(fresh).dumpsTypedForRow("v", row);
    const again = await EncryptedSerializer.fromKey(key, { serde: json() }).forDatabase(fresh.record);
    expect(await rowSerde(again).loadsTypedForRow(type, data, row)).toBe("v");
    // And re-wraps to a key with all usages, and back.
    const next = await fromPass("next");
    const rewrapped = await serde.rewrapFor(fresh.record!, next);
    expect(await rowSerde(await next.forDatabase(rewrapped)).loadsTypedForRow(type, data, row)).toBe("v");
  });

  it("rewrapFor moves the data key to a new passphrase: rows unchanged, old passphrase out", async () => {
    const old = await fromPass("old");
    const created = await old.forDatabase(undefined);
    const [type, data] = await rowSerde(created).dumpsTypedForRow({ secret: MARKER }, row);
    const next = await fromPass("new");
    const rewrapped = (await old.rewrapFor(created.record!, next)) as AesGcmKeyRecord;
    expect(rewrapped.kek).toBe(await next.keyId());
    expect(rewrapped.keys[0]!.id).toBe((created.record as AesGcmKeyRecord).keys[0]!.id);
    expect(await rowSerde(await next.forDatabase(rewrapped)).loadsTypedForRow(type, data, row)).toEqual({
      secret: MARKER,
    });
    expect((await decryptionError(old.forDatabase(rewrapped))).message).toMatch(/Wrong passphrase or key/);
    await decryptionError((await fromPass("wrong")).rewrapFor(created.record!, next));
    await expect(old.rewrapFor(created.record!, json())).rejects.toThrow(TypeError);
  });

  it("beginRekey/endRekey move rows to a fresh data key", async () => {
    const serde = await fromPass("pass", { allowPlaintext: true });
    const created = await serde.forDatabase(undefined);
    const oldRecord = created.record as AesGcmKeyRecord;
    const [type, data] = await rowSerde(created).dumpsTypedForRow({ secret: MARKER }, row);

    const rotation = await serde.beginRekey(oldRecord);
    const record = rotation.record as AesGcmKeyRecord;
    expect(record.keys).toHaveLength(2);
    expect(record.keys[1]).toEqual(oldRecord.keys[0]);
    // Resuming an interrupted rekey makes a fresh key again (the record's order is not sealed).
    const resumed = (await serde.beginRekey(record)).record as AesGcmKeyRecord;
    expect(resumed.keys.slice(1)).toEqual(record.keys);
    expect(record.keys.map((key) => key.id)).not.toContain(resumed.keys[0]!.id);

    const rewritten = await rotation.rewrite([type, data], row);
    expect(rewritten).toBeDefined();
    expect(inspectEnvelope(rewritten![1])?.keyId).toBe(record.keys[0]!.id);
    expect(await rotation.rewrite(rewritten!, row)).toBeUndefined();
    // Plaintext (allowPlaintext) gets encrypted; the inner bytes are kept as they are.
    const plain = await json().dumpsTyped({ legacy: MARKER });
    const sealed = await rotation.rewrite(plain, row);
    expect(sealed![0]).toBe("json+aes-gcm");
    expect(containsText(sealed![1], MARKER)).toBe(false);
    // A value moved from another row does not get re-encrypted into this one.
    await decryptionError(rotation.rewrite([type, data], ["blob", "t", "", "messages", 2]));

    const finished = (await serde.endRekey(record)) as AesGcmKeyRecord;
    expect(finished.keys.map((k) => k.id)).toEqual([record.keys[0]!.id]);
    const bound = rowSerde(await serde.forDatabase(finished));
    expect(await bound.loadsTypedForRow(rewritten![0], rewritten![1], row)).toEqual({ secret: MARKER });
    expect(await bound.loadsTypedForRow(sealed![0], sealed![1], row)).toEqual({ legacy: MARKER });
    expect((await decryptionError(bound.loadsTypedForRow(type, data, row))).message).toMatch(/another key/);
  });
});

/** A database in memory: a key record and rows of `[type, bytes]` by row ref, for the rekey.ts helpers. */
class MemoryDatabase {
  record: KeyRecord | undefined;
  readonly rows = new Map<string, { row: RowRef; value: [string, Uint8Array] }>();
  bindings = 0;

  records(): KeyRecordAccess {
    return {
      read: async () => (this.record === undefined ? undefined : structuredClone(this.record)),
      replace: async (expected, next) => {
        if (!sameClone(this.record, expected)) return false;
        this.record = structuredClone(next);
        return true;
      },
    };
  }

  async bind(serde: EncryptedSerializer): Promise<RowBoundSerializer> {
    this.bindings++;
    const binding = await serde.forDatabase(this.record);
    if (binding.record) this.record = binding.record;
    return rowSerde(binding);
  }

  async put(serde: EncryptedSerializer, row: RowRef, value: unknown): Promise<void> {
    this.rows.set(JSON.stringify(row), { row, value: await (await this.bind(serde)).dumpsTypedForRow(value, row) });
  }

  async readAll(serde: EncryptedSerializer): Promise<unknown[]> {
    const bound = await this.bind(serde);
    return Promise.all(
      [...this.rows.values()].map(({ row, value }) => bound.loadsTypedForRow(value[0], value[1], row)),
    );
  }

  rewriteAll(failAfter = Infinity): (rewrite: ValueRewriter) => Promise<number> {
    return async (rewrite) => {
      let changed = 0;
      for (const entry of this.rows.values()) {
        const next = await rewrite(entry.value, entry.row);
        if (!next) continue;
        if (changed >= failAfter) throw new Error("crash");
        entry.value = next;
        changed++;
      }
      return changed;
    };
  }
}

describe("serde/rekey.ts key changes (changeDatabaseKey, rekeyDatabase)", () => {
  const rows: RowRef[] = [
    ["checkpoint", "t", "", "1"],
    ["metadata", "t", "", "1"],
    ["blob", "t", "", "messages", 1],
    ["write", "t", "", "1", "task", 0],
  ];

  it("sameClone compares structured-clone values (key records, rows) deeply", () => {
    const row = () => ({
      id: ["a", 1],
      at: new Date(5),
      bytes: new Uint8Array([1, 2]),
      floats: new Float64Array([0.5]),
      map: new Map([["k", { v: 1 }]]),
      set: new Set([1]),
      nested: { typed: ["json", new Uint8Array([3])] },
    });
    expect(sameClone(row(), row())).toBe(true);
    expect(sameClone(row(), { ...row(), at: new Date(6) })).toBe(false);
    expect(sameClone(row(), { ...row(), bytes: new Uint8Array([1, 3]) })).toBe(false);
    expect(sameClone(row(), { ...row(), map: new Map([["k", { v: 2 }]]) })).toBe(false);
    expect(sameClone(row(), { ...row(), extra: undefined })).toBe(false);
    expect(sameClone([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(sameClone(new Uint8Array([1]), new Int8Array([1]))).toBe(false);
    expect(sameClone(undefined, undefined)).toBe(true);
    expect(sameClone(undefined, null)).toBe(false);
  });

  it("changeDatabaseKey re-wraps: every row still reads under the new key, none under the old", async () => {
    const db = new MemoryDatabase();
    const old = await fromPass("old");
    for (const row of rows) await db.put(old, row, { row, secret: MARKER });
    const before = new Map([...db.rows].map(([k, v]) => [k, v.value[1]]));
    const next = await fromPass("new");
    await changeDatabaseKey(old, next, db.records());
    expect(await db.readAll(next)).toHaveLength(rows.length);
    for (const [k, v] of db.rows) expect(v.value[1]).toBe(before.get(k)); // nothing re-encrypted
    await decryptionError(db.readAll(await fromPass("old")));
    // No record yet: nothing to do.
    const empty = new MemoryDatabase();
    await changeDatabaseKey(old, next, empty.records());
    expect(empty.record).toBeUndefined();
    // A plain serializer cannot take over an encrypted database's record.
    await expect(changeDatabaseKey(json(), next, db.records())).rejects.toThrow(/EncryptedSerializer/);
  });

  it("rekeyDatabase re-encrypts every row under a fresh data key, and survives a crash half-way", async () => {
    const db = new MemoryDatabase();
    const serde = await fromPass("pass", { allowPlaintext: true });
    for (const row of rows) await db.put(serde, row, { row, secret: MARKER });
    // One row from before encryption was turned on.
    db.rows.set("legacy", {
      row: ["blob", "t", "", "legacy", 1],
      value: (await json().dumpsTyped({ legacy: MARKER })) as [string, Uint8Array],
    });
    const oldId = (db.record as AesGcmKeyRecord).keys[0]!.id;

    await expect(rekeyDatabase(serde, db.records(), db.rewriteAll(2))).rejects.toThrow("crash");
    expect((db.record as AesGcmKeyRecord).keys).toHaveLength(2);
    expect(await db.readAll(serde)).toHaveLength(rows.length + 1); // half-done still reads

    await rekeyDatabase(serde, db.records(), db.rewriteAll());
    const record = db.record as AesGcmKeyRecord;
    expect(record.keys).toHaveLength(1);
    expect(record.keys[0]!.id).not.toBe(oldId);
    for (const { value } of db.rows.values()) {
      expect(value[0].endsWith(AES_GCM_SUFFIX)).toBe(true);
      expect(inspectEnvelope(value[1])?.keyId).toBe(record.keys[0]!.id);
    }
    const values = await db.readAll(await fromPass("pass"));
    expect(values).toContainEqual({ legacy: MARKER });
    expect(
      containsText(
        [...db.rows.values()].map((r) => r.value),
        MARKER,
      ),
    ).toBe(false);
  });

  it("rekeyDatabase fails closed on plaintext without allowPlaintext, leaving every row readable", async () => {
    const db = new MemoryDatabase();
    const serde = await fromPass("pass");
    for (const row of rows) await db.put(serde, row, 1);
    db.rows.set("legacy", {
      row: ["blob", "t", "", "legacy", 1],
      value: (await json().dumpsTyped(2)) as [string, Uint8Array],
    });
    await expect(rekeyDatabase(serde, db.records(), db.rewriteAll())).rejects.toBeInstanceOf(DecryptionError);
    db.rows.delete("legacy");
    expect(await db.readAll(serde)).toEqual([1, 1, 1, 1]);
    await expect(rekeyDatabase(json(), db.records(), db.rewriteAll())).rejects.toThrow(/EncryptedSerializer/);
  });
});

describe("EncryptedSerializer with MemorySaver (any BaseCheckpointSaver)", () => {
  /** A graph that pauses before a human-approval step, so pending writes and state updates get stored too. */
  function buildGraph(checkpointer: MemorySaver) {
    return new StateGraph(MessagesAnnotation)
      .addNode("agent", (state) => ({
        messages: [new AIMessage({ content: `${MARKER} answer ${state.messages.length}` })],
      }))
      .addNode("approve", () => ({ messages: [new AIMessage("approved")] }))
      .addEdge(START, "agent")
      .addEdge("agent", "approve")
      .addEdge("approve", END)
      .compile({ checkpointer, interruptBefore: ["approve"] });
  }

  async function run(checkpointer: MemorySaver) {
    const graph = buildGraph(checkpointer);
    const config = { configurable: { thread_id: "thread-1" } };
    await graph.invoke({ messages: [new HumanMessage(`${MARKER} hello`)] }, config);
    const paused = await graph.getState(config);
    await graph.updateState(config, { messages: [new HumanMessage(`${MARKER} go ahead`)] });
    await graph.invoke(null, config);
    return { graph, config, paused };
  }

  it("runs a graph with a pause and a state update on MemorySaver, storing nothing in plaintext", async () => {
    const serde = await EncryptedSerializer.fromRawKey(rawKey(12));
    const memory = new MemorySaver(serde);
    const { graph, config, paused } = await run(memory);
    expect(paused.next).toEqual(["approve"]);
    const state = await graph.getState(config);
    const messages: BaseMessage[] = state.values.messages;
    expect(messages.map((m) => m.content)).toEqual([
      `${MARKER} hello`,
      `${MARKER} answer 1`,
      `${MARKER} go ahead`,
      "approved",
    ]);
    expect(messages[0]).toBeInstanceOf(HumanMessage);
    expect(messages[3]).toBeInstanceOf(AIMessage);
    let history = 0;
    for await (const snapshot of graph.getStateHistory(config)) history += snapshot ? 1 : 0;
    expect(history).toBeGreaterThanOrEqual(4);

    expect(containsText(memory.storage, MARKER)).toBe(false);
    expect(containsText(memory.writes, MARKER)).toBe(false);
    // The same scan sees the marker when nothing is encrypted.
    const plain = new MemorySaver();
    await run(plain);
    expect(containsText(plain.storage, MARKER)).toBe(true);
    expect(containsText(plain.writes, MARKER)).toBe(true);
  });

  it("cannot read a MemorySaver's data with another key", async () => {
    const memory = new MemorySaver(await EncryptedSerializer.fromRawKey(rawKey(12)));
    const { config } = await run(memory);
    const thief = new MemorySaver(await EncryptedSerializer.fromRawKey(rawKey(13)));
    thief.storage = memory.storage;
    thief.writes = memory.writes;
    await decryptionError(buildGraph(thief).getState(config));
    const owner = new MemorySaver(await EncryptedSerializer.fromRawKey(rawKey(12)));
    owner.storage = memory.storage;
    owner.writes = memory.writes;
    expect((await buildGraph(owner).getState(config)).values.messages).toHaveLength(4);
  });
});
