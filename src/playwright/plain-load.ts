/**
 * Stands in for `@langchain/core/load` in the script injected into pages
 * (the page build aliases the module to this one). The page helpers never
 * need LangChain class instances: they hand plain data to the test and pass
 * stored values through to the app's database. So a LangChain record is kept
 * as a {@link LangChainRecord}, which the serializer writes back as exactly
 * the record it read (it is "Serializable-like": `lc_serializable` and a
 * `toJSON()` giving the record), and the app's own serializer revives it.
 * This keeps `@langchain/core` (with langsmith and zod, about 1 MB minified)
 * out of the injected script.
 */

/** A LangChain constructor record (`{ lc: 1, type: "constructor", id, kwargs }`), kept as data. */
export class LangChainRecord {
  /** Marks it for the serializer as LangChain's own Serializable objects are marked. */
  readonly lc_serializable = true;

  constructor(
    /** The record as stored. */
    readonly record: { lc: 1; type: "constructor"; id: string[]; kwargs: Record<string, unknown> },
  ) {}

  /** The record, as a Serializable's `toJSON()` gives it. */
  toJSON(): LangChainRecord["record"] {
    return this.record;
  }
}

/** True for `{ lc: 1, type: "constructor", id: string[], kwargs: {} }`. */
export function isConstructorRecord(value: unknown): value is LangChainRecord["record"] {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    record.lc === 1 &&
    record.type === "constructor" &&
    Array.isArray(record.id) &&
    record.id.every((part) => typeof part === "string") &&
    typeof record.kwargs === "object" &&
    record.kwargs !== null
  );
}

/**
 * `load()`'s signature: parses the JSON and keeps a top-level constructor
 * record as a {@link LangChainRecord}; records nested in its kwargs stay
 * plain inside it, as `toJSON()` of a real object would give them.
 */
export function load(text: string, _options?: unknown): Promise<unknown> {
  const value: unknown = JSON.parse(text);
  return Promise.resolve(isConstructorRecord(value) ? new LangChainRecord(value) : value);
}
