/**
 * The sidebar's thread titles, opened from their stored (possibly sealed)
 * form. Every change of the threads table redraws the sidebar, so each
 * title is opened once and kept until its stored value changes: a locked
 * vault would otherwise decrypt every title on every message.
 */
import { titlePlace, type Vault } from "./settings.js";
import type { ThreadRow } from "./threads-db.js";
import type { SidebarThread } from "./ui/sidebar.js";

/** Two stored titles are the same value (sealed ones compare by bytes). */
function sameSealed(a: unknown, b: unknown): boolean {
  if (typeof a === "string" || typeof b === "string") return a === b;
  const x = (a as { data: Uint8Array }).data;
  const y = (b as { data: Uint8Array }).data;
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

/** Opened titles by thread id, with the stored value each was opened from. */
export class TitleCache {
  readonly #titles = new Map<string, { sealed: unknown; title: string }>();

  /** Forgets every title (another vault opens them differently). */
  clear(): void {
    this.#titles.clear();
  }

  /** The sidebar's threads for `rows`, titles opened with `vault` (an unreadable one says so). */
  threads(rows: ThreadRow[], vault: Vault): Promise<SidebarThread[]> {
    return Promise.all(
      rows.map(async (row): Promise<SidebarThread> => {
        const cached = this.#titles.get(row.id);
        let title: string;
        if (cached && sameSealed(cached.sealed, row.title)) title = cached.title;
        else {
          title = await vault.open(row.title, titlePlace(row.id)).catch(() => "(unreadable title)");
          this.#titles.set(row.id, { sealed: row.title, title });
        }
        return { id: row.id, title, updatedAt: row.updatedAt };
      }),
    );
  }
}
