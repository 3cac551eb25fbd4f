/**
 * The demo's sync settings (server URL and token), sealed like the model
 * settings, and the client that replicates the saver through a sync server
 * (`npm run sync-server`; see docs/sync.md).
 */
import { loadSetting, settingRow, type Vault } from "./settings.js";
import type { DemoDB } from "./threads-db.js";

/** Where to sync, and as whom. Empty fields: sync off. */
export interface SyncSettings {
  url: string;
  token: string;
}

export const NO_SYNC: SyncSettings = { url: "", token: "" };

/** Throws `UnsealedTextError` for a row a locked vault did not seal (see `loadSetting`). */
export function loadSyncSettings(db: DemoDB, vault: Vault): Promise<SyncSettings> {
  return loadSetting(db, vault, "sync", NO_SYNC);
}

export async function saveSyncSettings(db: DemoDB, vault: Vault, settings: SyncSettings): Promise<void> {
  await db.settings.put(await settingRow(vault, "sync", settings));
}

/**
 * A one-line status for the sidebar ("Synced", "Offline, 3 changes waiting", …).
 * The client's `offline` means no answer came: the device's network is down,
 * or only the server (stopped, a wrong address) while the page is online.
 * "Offline" said of the latter sent people looking at their connection.
 * @param online `navigator.onLine` when the status came: only `false` reads "Offline".
 */
export function describeSync(
  status: { state: string; pending: number; threads: number; error?: string },
  online = true,
): string {
  switch (status.state) {
    case "stopped":
      return "Sync off";
    case "syncing":
      return status.threads > 0 ? `Syncing ${status.threads} thread${status.threads === 1 ? "" : "s"}…` : "Syncing…";
    case "offline":
      return `${online ? "Can't reach the sync server" : "Offline"}${status.pending > 0 ? `, ${status.pending} change${status.pending === 1 ? "" : "s"} waiting` : ""}`;
    case "error":
      return `Sync error: ${status.error ?? "unknown"}`;
    default:
      return status.pending > 0 ? `${status.pending} change${status.pending === 1 ? "" : "s"} to sync` : "Synced";
  }
}
