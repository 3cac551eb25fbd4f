/**
 * A read cache of whole namespaces for `IndexedDBStore` searches.
 *
 * Reading rows is what a search costs in IndexedDB: in Chromium about 10-20
 * µs per row whatever the value encoding (keys alone cost about half), so a
 * filter that has to look at 10,000 items costs ~150 ms, against ~3 ms for
 * `InMemoryStore`. The cache keeps, in creation order and with their decoded
 * values, the rows a search read of each namespace: the whole namespace when
 * it read it in full (with its vectors once a ranked search needed them), or
 * its first items when a page stopped early. A later page is served from
 * that head, and a search that needs more reads only the rows after it.
 *
 * It is never trusted blindly: every namespace row carries the generation of
 * the last write transaction that touched it, and a search reads those rows
 * (one small range read) inside its own transaction. An entry is used only if
 * its generation is the one just read, so a write from this instance, another
 * instance or another tab is seen at once, without any messaging. When the
 * store-wide generation (one `get`) shows no write at all since a prefix's
 * namespace rows were read, they are not read again either.
 */
import type { ItemVectors } from "./query.js";
import type { ItemRow, NamespaceRow } from "./schema.js";

/** One namespace, as of `generation`: all of it, or its first items. */
export interface CachedNamespace {
  generation: number;
  /** The namespace's first items in creation order: all of them when `complete`. */
  rows: ItemRow[];
  /**
   * True when `rows` is the whole namespace; false for the head a page read
   * (the items created after the last of `rows` were not read).
   */
  complete: boolean;
  /** Decoded values, parallel to `rows` (the rows' own values without a serializer). */
  values: unknown[];
  /** Vectors by item key, once loaded (a missing key: the item has none); complete entries only. */
  vectors?: Map<string, ItemVectors>;
}

/** The default budget of a store's cache, in items. */
export const DEFAULT_CACHE_ITEMS = 20_000;

/** How many prefixes' namespace lists are kept. */
const PREFIX_LISTS = 64;

/**
 * Namespaces (whole, or their heads) by id, least recently used first,
 * within a budget of items (an entry larger than the budget is not kept).
 */
export class NamespaceCache {
  readonly #entries = new Map<string, CachedNamespace>();
  #items = 0;
  /** Namespace rows under a prefix, as of a store-wide generation. */
  readonly #lists = new Map<string, { generation: number; rows: NamespaceRow[] }>();
  #epoch = 0;

  /** @param maxItems Budget in items; 0 disables the cache. */
  constructor(readonly maxItems: number) {}

  /**
   * Counts {@link clear}s. A search notes it before it reads and hands it to
   * {@link set}: what it read from a database since dropped (closed, deleted,
   * made again with its generations started over) is not kept.
   */
  get epoch(): number {
    return this.#epoch;
  }

  /** False when the cache is off. */
  get enabled(): boolean {
    return this.maxItems > 0;
  }

  /**
   * The namespace rows under prefix `id` (in first-use order), if known as
   * of the store-wide `generation`: when no write at all happened since, a
   * search need not read them again.
   */
  namespaces(id: string, generation: number): NamespaceRow[] | undefined {
    const list = this.#lists.get(id);
    if (!list || list.generation !== generation) return undefined;
    this.#lists.delete(id);
    this.#lists.set(id, list);
    return list.rows;
  }

  /**
   * Remembers the namespace rows under prefix `id` as of store-wide
   * `generation`, read when the cache was at `epoch`: a list read across a
   * {@link clear} (the database dropped between the transaction's reads of
   * the generation and of the list) is not kept, as {@link set} keeps no entry.
   */
  setNamespaces(id: string, generation: number, rows: NamespaceRow[], epoch: number): void {
    if (!this.enabled || epoch !== this.#epoch) return;
    this.#lists.delete(id);
    this.#lists.set(id, { generation, rows });
    for (const oldest of this.#lists.keys()) {
      if (this.#lists.size <= PREFIX_LISTS) break;
      this.#lists.delete(oldest);
    }
  }

  /** The entry of namespace `id`, if it is as of `generation`. */
  get(id: string, generation: number): CachedNamespace | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    if (entry.generation !== generation) {
      this.delete(id);
      return undefined;
    }
    // Most recently used last.
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    return entry;
  }

  /**
   * Keeps `entry` for namespace `id`, read when the cache was at `epoch`,
   * evicting the least recently used entries as needed. Returns false (and
   * keeps nothing) when the cache was cleared since, the entry alone exceeds
   * the budget, or a newer one, or one of the same generation holding at
   * least as much, is already there.
   */
  set(id: string, entry: CachedNamespace, epoch: number): boolean {
    if (!this.enabled || epoch !== this.#epoch || entry.rows.length > this.maxItems) return false;
    const current = this.#entries.get(id);
    if (current && current !== entry) {
      if (current.generation > entry.generation) return false;
      const holdsAsMuch = current.complete || (!entry.complete && current.rows.length >= entry.rows.length);
      if (current.generation === entry.generation && holdsAsMuch) return false;
    }
    this.delete(id);
    this.#entries.set(id, entry);
    this.#items += entry.rows.length;
    for (const [oldest, old] of this.#entries) {
      if (this.#items <= this.maxItems) break;
      this.#entries.delete(oldest);
      this.#items -= old.rows.length;
    }
    return true;
  }

  /** Forgets namespace `id`. */
  delete(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    this.#items -= entry.rows.length;
  }

  /** Forgets everything. */
  clear(): void {
    this.#epoch += 1;
    this.#entries.clear();
    this.#lists.clear();
    this.#items = 0;
  }

  /** Items held now. */
  get size(): number {
    return this.#items;
  }
}
