/**
 * core/: leaf utilities every layer may use: the error classes and the error
 * policy (errors.ts), byte helpers, CRC-32, structural equality, guards and
 * identity strings. It imports nothing of the package.
 */
export * from "./errors.js";
export * from "./bytes.js";
export * from "./crc32.js";
export * from "./equality.js";
export * from "./guards.js";
export * from "./identity.js";
