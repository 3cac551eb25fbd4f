/**
 * Embeddings, before the transaction: each distinct query of ranked
 * searches, and the texts of every put, embedded in one call.
 */
import type { IndexConfig, PutOperation } from "@langchain/langgraph-checkpoint";
import { norm } from "./query.js";
import type { SearchPlan } from "./search.js";
import { overridePaths, textsToEmbed, type IndexPath } from "./text.js";
import type { PreparedPut } from "./write.js";

/** The embedding side of the configuration, prepared once. */
export interface PreparedIndex {
  config: IndexConfig;
  paths: IndexPath[];
}

/** Embeds each distinct query of the ranked searches (when an index is configured). */
export async function embedQueries(index: PreparedIndex | undefined, searches: SearchPlan[]): Promise<void> {
  const embeddings = index?.config.embeddings;
  if (!embeddings) return;
  const queries = [...new Set(searches.flatMap((s) => (s.op.query ? [s.op.query] : [])))];
  if (!queries.length) return;
  const vectors = await Promise.all(queries.map((query) => embeddings.embedQuery(query)));
  const dims = index.config.dims;
  vectors.forEach((vector, i) => {
    // No vector at all: an unranked page, as upstream. One of the wrong size
    // is the model's fault, not the stored vectors' (whose check would blame them).
    if (!vector) return;
    if (vector.length !== dims) {
      throw new Error(
        `IndexedDBStore: the embeddings returned a query vector of ${vector.length} dimensions, but \`index.dims\` is ${dims}. Set \`index.dims\` to the model's vector size.`,
      );
    }
    // A NaN or infinite number would score every item 0 (or NaN): a page of noise.
    const bad = nonFinite(vector);
    if (bad !== undefined) {
      throw new Error(
        `IndexedDBStore: the embeddings returned a query vector holding ${bad} for the query ${shown(queries[i]!)}. A vector must hold finite numbers: check the embeddings model's output.`,
      );
    }
  });
  const byQuery = new Map(queries.map((query, i) => [query, vectors[i]]));
  for (const search of searches) {
    const vector = search.op.query ? byQuery.get(search.op.query) : undefined;
    if (vector) {
      search.queryVector = vector;
      // A ranked search scores every candidate: no early stop.
      search.need = undefined;
    }
  }
}

/** Extracts the texts of every put, embeds the distinct ones in one call, builds each item's vectors. */
export async function embedPuts(index: PreparedIndex | undefined, puts: PutOperation[]): Promise<PreparedPut[]> {
  const prepared: PreparedPut[] = puts.map((op) => ({ op }));
  if (!index || !puts.length) return prepared;
  const textsByPut = puts.map((op) =>
    op.value === null || op.index === false
      ? new Map<string, string>()
      : textsToEmbed(op.value, op.index == null ? index.paths : overridePaths(op.index)),
  );
  const distinct = [...new Set(textsByPut.flatMap((texts) => [...texts.values()]))];
  if (!distinct.length) return prepared;
  const embedded = await index.config.embeddings.embedDocuments(distinct);
  if (!Array.isArray(embedded) || embedded.length !== distinct.length) {
    throw new Error(
      `IndexedDBStore: the embeddings returned ${Array.isArray(embedded) ? embedded.length : "no"} vectors for ${distinct.length} texts.`,
    );
  }
  const dims = index.config.dims;
  const byText = new Map<string, number[]>();
  /** Texts whose vector holds a number that is not finite, with the first such number. */
  const unscorable = new Map<string, string>();
  distinct.forEach((text, i) => {
    const vector = embedded[i];
    if (!vector || typeof vector.length !== "number") {
      throw new Error(`IndexedDBStore: the embeddings returned no vector for the text ${shown(text)}.`);
    }
    if (vector.length !== dims) {
      throw new Error(
        `IndexedDBStore: the embeddings returned a vector of ${vector.length} dimensions, but \`index.dims\` is ${dims}. Set \`index.dims\` to the model's vector size.`,
      );
    }
    const bad = nonFinite(vector);
    if (bad !== undefined) unscorable.set(text, bad);
    byText.set(text, vector);
  });
  // Refused here, before the transaction, as a vector of the wrong size: every
  // search would score the item 0 (NaN gives a NaN norm) or NaN (±Infinity),
  // a score the sort counts as a tie with any other, so the item kept its
  // store-order place, often ahead of the real matches.
  if (unscorable.size) {
    puts.forEach((op, i) => {
      for (const [field, text] of textsByPut[i]!) {
        const bad = unscorable.get(text);
        if (bad === undefined) continue;
        throw new Error(
          `IndexedDBStore: the embeddings returned a vector holding ${bad} for the field "${field}" of item "${op.key}" in namespace [${op.namespace.join(", ")}]. A vector must hold finite numbers: nothing of this batch was written. Check the embeddings model's output for that text.`,
        );
      }
    });
  }
  textsByPut.forEach((texts, i) => {
    if (!texts.size) return;
    const fields = [...texts.keys()];
    const vectors = new Float64Array(fields.length * dims);
    const norms = new Float64Array(fields.length);
    fields.forEach((field, j) => {
      const vector = byText.get(texts.get(field)!)!;
      vectors.set(vector, j * dims);
      // The norm of the numbers as given, so scores match InMemoryStore's.
      norms[j] = norm(vector);
    });
    prepared[i]!.vectors = { fields, dims, vectors, norms };
  });
  return prepared;
}

/** A text as messages quote it: JSON, cut at 80 characters. */
function shown(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

/**
 * The first number of `vector` that is not finite (NaN, ±Infinity), as
 * messages show it, after the coercion the stored `Float64Array` applies
 * (a string that is no number becomes NaN there); undefined when all are.
 */
function nonFinite(vector: ArrayLike<unknown>): string | undefined {
  for (let i = 0; i < vector.length; i++) {
    const number = Number(vector[i]);
    if (!Number.isFinite(number)) return String(number);
  }
  return undefined;
}
