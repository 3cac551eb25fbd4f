/**
 * The 128-bit XXH3 variant LangGraph.js names interrupts with (its
 * hash module, MIT, itself a port of xxh3-ts), reproduced bit for bit.
 *
 * Why not a hashing library: an interrupt id is only useful if it equals the
 * id LangGraph computes when it matches `Command({ resume: { [id]: value } })`,
 * and LangGraph's variant is not the canonical XXH3-128 (its 17-128 byte and
 * long-input paths differ), so a canonical implementation would give other
 * ids. LangGraph does not export its hash. The tests compare this function
 * with LangGraph's own on inputs of every length class.
 */

const PRIME32_1 = 0x9e3779b1n;
const PRIME32_2 = 0x85ebca77n;
const PRIME32_3 = 0xc2b2ae3dn;
const PRIME64_1 = 0x9e3779b185ebca87n;
const PRIME64_2 = 0xc2b2ae3d27d4eb4fn;
const PRIME64_3 = 0x165667b19e3779f9n;
const PRIME64_4 = 0x85ebca77c2b2ae63n;
const PRIME64_5 = 0x27d4eb2f165667c5n;
const PRIME_MX1 = 0x165667919e3779f9n;
const PRIME_MX2 = 0x9fb21c651e98df25n;
const MASK32 = (1n << 32n) - 1n;
const MASK64 = (1n << 64n) - 1n;
const MASK128 = (1n << 128n) - 1n;
const STRIPE_LEN = 64;
const ACC_NB = STRIPE_LEN / 8;

/** XXH3's default 192-byte secret. */
const SECRET_HEX =
  "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671fcb79e64eccc0e578825ad07dccff7221" +
  "b8084674f743248ee03590e6813a264c3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8" +
  "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364eac5ac8334d3ebc3c581a0fffa1363eb" +
  "170ddd51b7f0da49d316552629d4689e2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e";

let secret: DataView | undefined;

/** The secret, decoded on first use so that importing this module costs nothing. */
function defaultSecret(): DataView {
  if (secret === undefined) {
    const bytes = new Uint8Array(SECRET_HEX.length / 2);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = Number.parseInt(SECRET_HEX.slice(2 * i, 2 * i + 2), 16);
    secret = new DataView(bytes.buffer);
  }
  return secret;
}

/** A view of `data` from `offset` to its end. */
function at(data: DataView, offset: number): DataView {
  return new DataView(data.buffer, data.byteOffset + offset, data.byteLength - offset);
}

const u64 = (data: DataView, offset: number): bigint => data.getBigUint64(offset, true);
const u32 = (data: DataView, offset: number): bigint => BigInt(data.getUint32(offset, true));
const xorshift64 = (value: bigint, shift: bigint): bigint => value ^ (value >> shift);
const negate64 = (value: bigint): bigint => (~value + 1n) & MASK64;

function bswap64(value: bigint): bigint {
  const scratch = new DataView(new ArrayBuffer(8));
  scratch.setBigUint64(0, value, true);
  return scratch.getBigUint64(0, false);
}

function bswap32(value: bigint): bigint {
  let a = ((value & 0xffffn) << 16n) | ((value & 0xffff0000n) >> 16n);
  a = ((a & 0xff00ffn) << 8n) | ((a & 0xff00ff00n) >> 8n);
  return a;
}

const rotl32 = (value: bigint, bits: bigint): bigint => ((value << bits) | (value >> (32n - bits))) & MASK32;
const mult32to64 = (a: bigint, b: bigint): bigint => ((a & MASK32) * (b & MASK32)) & MASK64;

function mul128Fold64(a: bigint, b: bigint): bigint {
  const product = (a * b) & MASK128;
  return (product & MASK64) ^ (product >> 64n);
}

function avalanche(input: bigint): bigint {
  let h = input ^ (input >> 37n);
  h = (h * PRIME_MX1) & MASK64;
  return h ^ (h >> 32n);
}

function avalanche64(input: bigint): bigint {
  let h = input ^ (input >> 33n);
  h = (h * PRIME64_2) & MASK64;
  h ^= h >> 29n;
  h = (h * PRIME64_3) & MASK64;
  return h ^ (h >> 32n);
}

function accumulate512(acc: BigUint64Array, data: DataView, key: DataView): void {
  for (let i = 0; i < ACC_NB; i += 1) {
    const value = u64(data, i * 8);
    const keyed = value ^ u64(key, i * 8);
    // BigUint64Array stores modulo 2^64, which is the wrap-around XXH3 wants.
    acc[i ^ 1]! += value;
    acc[i]! += mult32to64(keyed, keyed >> 32n);
  }
}

function accumulate(acc: BigUint64Array, data: DataView, key: DataView, stripes: number): void {
  for (let s = 0; s < stripes; s += 1) accumulate512(acc, at(data, s * STRIPE_LEN), at(key, s * 8));
}

function scramble(acc: BigUint64Array, key: DataView): void {
  for (let i = 0; i < ACC_NB; i += 1) {
    const mixed = xorshift64(acc[i]!, 47n) ^ u64(key, i * 8);
    acc[i] = (mixed * PRIME32_1) & MASK64;
  }
}

function mergeAccs(acc: BigUint64Array, key: DataView, start: bigint): bigint {
  let result = start;
  for (let i = 0; i < 4; i += 1) {
    result += mul128Fold64(acc[2 * i]! ^ u64(key, 16 * i), acc[2 * i + 1]! ^ u64(key, 16 * i + 8));
  }
  return avalanche(result & MASK64);
}

function hashLong128(data: DataView, key: DataView): bigint {
  const acc = new BigUint64Array([
    PRIME32_3,
    PRIME64_1,
    PRIME64_2,
    PRIME64_3,
    PRIME64_4,
    PRIME32_2,
    PRIME64_5,
    PRIME32_1,
  ]);
  const stripesPerBlock = Math.floor((key.byteLength - STRIPE_LEN) / 8);
  const blockLen = STRIPE_LEN * stripesPerBlock;
  const blocks = Math.floor((data.byteLength - 1) / blockLen);
  for (let b = 0; b < blocks; b += 1) {
    accumulate(acc, at(data, b * blockLen), key, stripesPerBlock);
    scramble(acc, at(key, key.byteLength - STRIPE_LEN));
  }
  const stripes = Math.floor((data.byteLength - 1 - blockLen * blocks) / STRIPE_LEN);
  accumulate(acc, at(data, blocks * blockLen), key, stripes);
  accumulate512(acc, at(data, data.byteLength - STRIPE_LEN), at(key, key.byteLength - STRIPE_LEN - 7));
  const length = BigInt(data.byteLength);
  const low = mergeAccs(acc, at(key, 11), (length * PRIME64_1) & MASK64);
  const high = mergeAccs(acc, at(key, key.byteLength - STRIPE_LEN - 11), ~(length * PRIME64_2) & MASK64);
  return (high << 64n) | low;
}

function mix16B(data: DataView, key: DataView, seed: bigint): bigint {
  return mul128Fold64((u64(data, 0) ^ (u64(key, 0) + seed)) & MASK64, (u64(data, 8) ^ (u64(key, 8) - seed)) & MASK64);
}

function mix32B(acc: bigint, first: DataView, second: DataView, key: DataView, seed: bigint): bigint {
  let low = acc & MASK64;
  let high = (acc >> 64n) & MASK64;
  low += mix16B(first, key, seed);
  low ^= u64(second, 0) + u64(second, 8);
  low &= MASK64;
  high += mix16B(second, at(key, 16), seed);
  high ^= u64(first, 0) + u64(first, 8);
  high &= MASK64;
  return (high << 64n) | low;
}

function len1to3(data: DataView, key: DataView, seed: bigint): bigint {
  const len = data.byteLength;
  const combined =
    BigInt(data.getUint8(len - 1)) |
    BigInt(len << 8) |
    BigInt(data.getUint8(0) << 16) |
    BigInt(data.getUint8(len >> 1) << 24);
  const low = (combined ^ ((u32(key, 0) ^ u32(key, 4)) + seed)) & MASK64;
  const bitflipHigh = (u32(key, 8) ^ u32(key, 12)) - seed;
  const high = avalanche64((rotl32(bswap32(combined), 13n) ^ bitflipHigh) & MASK64) & MASK64;
  return (high << 64n) | avalanche64(low);
}

function len4to8(data: DataView, key: DataView, seed: bigint): bigint {
  const len = data.byteLength;
  const input = u32(data, 0) | (u32(data, len - 4) << 32n);
  const keyed = ((u64(key, 16) ^ u64(key, 24)) + seed) & MASK64;
  let m128 = ((input ^ keyed) * (PRIME64_1 + (BigInt(len) << 2n))) & MASK128;
  m128 += (m128 & MASK64) << 65n;
  m128 &= MASK128;
  m128 ^= m128 >> 67n;
  const low = xorshift64((xorshift64(m128 & MASK64, 35n) * PRIME_MX2) & MASK64, 28n);
  return low | (avalanche(m128 >> 64n) << 64n);
}

function len9to16(data: DataView, key: DataView, seed: bigint): bigint {
  const len = data.byteLength;
  const bitflipLow = ((u64(key, 32) ^ u64(key, 40)) + seed) & MASK64;
  const bitflipHigh = ((u64(key, 48) ^ u64(key, 56)) - seed) & MASK64;
  const first = u64(data, 0);
  let last = u64(data, len - 8);
  let m128 = (first ^ last ^ bitflipLow) * PRIME64_1;
  const m128Low = (m128 & MASK64) + (BigInt(len - 1) << 54n);
  m128 = (m128 & (MASK128 ^ MASK64)) | m128Low;
  last ^= bitflipHigh;
  m128 += (last + (last & MASK32) * (PRIME32_2 - 1n)) << 64n;
  m128 &= MASK128;
  m128 ^= bswap64(m128 >> 64n);
  let h128 = (m128 & MASK64) * PRIME64_2;
  h128 += ((m128 >> 64n) * PRIME64_2) << 64n;
  h128 &= MASK128;
  return avalanche(h128 & MASK64) | (avalanche(h128 >> 64n) << 64n);
}

function len0to16(data: DataView, key: DataView, seed: bigint): bigint {
  const len = data.byteLength;
  if (len > 8) return len9to16(data, key, seed);
  if (len >= 4) return len4to8(data, key, seed);
  if (len > 0) return len1to3(data, key, seed);
  return avalanche64(seed ^ u64(key, 64) ^ u64(key, 72)) | (avalanche64(seed ^ u64(key, 80) ^ u64(key, 88)) << 64n);
}

/** Folds the 128-bit accumulator of the 17-240 byte paths into the hash. */
function finish(acc: bigint, len: number, seed: bigint): bigint {
  const low = avalanche((acc + (acc >> 64n)) & MASK64);
  let high = (acc & MASK64) * PRIME64_1 + (acc >> 64n) * PRIME64_4 + ((BigInt(len) - seed) & MASK64) * PRIME64_2;
  high = negate64(avalanche(high & MASK64));
  return low | (high << 64n);
}

function len17to128(data: DataView, key: DataView, seed: bigint): bigint {
  const len = data.byteLength;
  let acc = (BigInt(len) * PRIME64_1) & MASK64;
  for (let i = Math.floor((len - 1) / 32); i >= 0; i -= 1) {
    acc = mix32B(acc, at(data, 16 * i), at(data, len - 16 * (i + 1)), at(key, 32 * i), seed);
  }
  return finish(acc, len, seed);
}

function len129to240(data: DataView, key: DataView, seed: bigint): bigint {
  const len = data.byteLength;
  let acc = (BigInt(len) * PRIME64_1) & MASK64;
  for (let i = 32; i < 160; i += 32) acc = mix32B(acc, at(data, i - 32), at(data, i - 16), at(key, i - 32), seed);
  acc = avalanche(acc & MASK64) | (avalanche(acc >> 64n) << 64n);
  for (let i = 160; i <= len; i += 32)
    acc = mix32B(acc, at(data, i - 32), at(data, i - 16), at(key, 3 + i - 160), seed);
  acc = mix32B(acc, at(data, len - 16), at(data, len - 32), at(key, 103), negate64(seed));
  return finish(acc, len, seed);
}

/**
 * LangGraph's XXH3-128 of a string's UTF-8 bytes, as 32 lowercase hex digits.
 * @internal
 */
export function xxh3(input: string): string {
  const bytes = new TextEncoder().encode(input);
  const data = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const key = defaultSecret();
  const len = data.byteLength;
  let hash: bigint;
  if (len <= 16) hash = len0to16(data, key, 0n);
  else if (len <= 128) hash = len17to128(data, key, 0n);
  else if (len <= 240) hash = len129to240(data, key, 0n);
  else hash = hashLong128(data, key);
  return hash.toString(16).padStart(32, "0");
}
