/**
 * What a sync failure means to a person: a stable code an app can switch on
 * and a sentence it can show as is. The `SyncError` message stays the
 * developer's (it names the route and quotes the server); this is the
 * user's.
 */
import { isQuotaError } from "../core/errors.js";
import { SyncError } from "./transport.js";

/** Kinds of sync failure an app may want to handle apart. */
export type SyncProblemCode =
  /** The server did not accept the token (401). */
  | "unauthorized"
  /** No answer: network down, server unreachable, timeout; or a request too slow to reach it whole (408). */
  | "offline"
  /** The server answered with a server error or is restarting (5xx): it retries by itself. */
  | "unavailable"
  /** Too many requests for now (429): it retries by itself. */
  | "rate_limited"
  /** A conversation is over the server's size limits (413). */
  | "too_large"
  /** The user's space on the sync server is full (its quota): new changes stay on this device. */
  | "server_full"
  /** This device ran out of storage (IndexedDB quota) while applying what it pulled. */
  | "device_full"
  /** The passphrase or data key does not match the other devices'. */
  | "key_mismatch"
  /** The synced threads are encrypted and this saver is not. */
  | "encrypted_user"
  /** The synced threads are plaintext and this saver encrypts. */
  | "plaintext_user"
  /** The server's answer is not this protocol (a wrong URL, another server version, a proxy's page). */
  | "incompatible"
  /** Anything else. */
  | "failed";

/** A failure as an app shows it. */
export interface SyncProblem {
  code: SyncProblemCode;
  /** One or two sentences for the person using the app. */
  message: string;
}

const MESSAGES: Record<SyncProblemCode, string> = {
  unauthorized: "The sync server did not accept this device's sign-in. Sign in again or check the sync token.",
  offline:
    "Can't reach the sync server. Your changes are kept on this device and will sync when the connection is back.",
  unavailable: "The sync server is having trouble right now. Sync will try again by itself.",
  rate_limited: "Sync is paused for a moment (too many requests). It will try again by itself.",
  too_large: "A conversation is too large for the sync server's limits. It stays on this device.",
  server_full:
    "Your space on the sync server is full. New changes stay on this device; delete old conversations to free space.",
  device_full: "This device is out of storage space, so synced changes could not be saved. Free some space.",
  key_mismatch:
    "This device's passphrase does not open the synced conversations. Enter the passphrase your other devices use.",
  encrypted_user: "Your synced conversations are encrypted. Enter your passphrase on this device to sync them.",
  plaintext_user:
    "Your synced conversations are not encrypted, but this device encrypts. Turn encryption off here to sync them.",
  incompatible: "The sync server's answer was not understood. Check the sync server address.",
  failed: "Sync failed. It will try again.",
};

/** The server codes of size limits. */
const TOO_LARGE = new Set(["too_large", "checkpoint_too_large", "too_many_checkpoints"]);

/** The code of a failure (see {@link SyncProblemCode}). */
function problemCode(error: unknown): SyncProblemCode {
  // Before the device's quota: the server's refusal names its quota too.
  if (error instanceof SyncError && (error.code === "quota_exceeded" || error.code === "too_many_apps"))
    return "server_full";
  if (isQuotaError(error)) return "device_full";
  if (!(error instanceof SyncError)) return "failed";
  // A 408: the request did not reach the server whole in time, a slow or stalling link.
  if (error.code === "offline" || error.status === 408) return "offline";
  if (error.status === 401 || error.code === "unauthorized") return "unauthorized";
  if (error.status === 429) return "rate_limited";
  if (error.status >= 500) return "unavailable";
  if (error.status === 413 || TOO_LARGE.has(error.code)) return "too_large";
  if (error.code === "key_mismatch" || error.code === "encrypted_user" || error.code === "plaintext_user")
    return error.code;
  if (error.code === "bad_response" || (error.status >= 400 && error.status < 500)) return "incompatible";
  return "failed";
}

/** What `error`, thrown by a sync round, means to a person. */
export function syncProblem(error: unknown): SyncProblem {
  const code = problemCode(error);
  return { code, message: MESSAGES[code] };
}
