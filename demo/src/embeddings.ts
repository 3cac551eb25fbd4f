/**
 * A tiny deterministic embedding model for the store's semantic search:
 * hashed bags of word stems, so that "what do you remember about my colour?"
 * finds "my favourite colour is teal" with no model download and no network.
 * A real app passes any LangChain `Embeddings` (OpenAI, transformers.js…).
 */
import { Embeddings } from "@langchain/core/embeddings";

export const DIMS = 128;

const STOP = new Set(
  "a an and are about at be do does did for from have i i'm in is it me my mine of on or our that the this to was we what you your".split(
    " ",
  ),
);

/** Content words, lower-cased, with a plural "s" dropped. */
export function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [])
    .filter((word) => !STOP.has(word))
    .map((word) => (word.length > 3 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word));
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

export function embed(text: string): number[] {
  const vector = new Array<number>(DIMS).fill(0);
  for (const word of contentWords(text)) vector[fnv1a(word) % DIMS]! += 1;
  const norm = Math.hypot(...vector) || 1;
  return vector.map((value) => value / norm);
}

export class HashEmbeddings extends Embeddings {
  constructor() {
    super({});
  }

  async embedDocuments(documents: string[]): Promise<number[][]> {
    return documents.map(embed);
  }

  async embedQuery(document: string): Promise<number[]> {
    return embed(document);
  }
}
