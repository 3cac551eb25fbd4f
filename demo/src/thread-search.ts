/**
 * Search across threads: a thread matches when its title or the text of any
 * of its messages contains every word of the query (case and accents
 * ignored). Message texts are read from the saver once per thread version
 * (its `updatedAt`), so typing does not decrypt every thread on each key.
 */
import type { BaseMessage } from "@langchain/core/messages";

/** A thread as the search sees it. */
export interface SearchableThread {
  id: string;
  title: string;
  updatedAt: number;
}

/** Lower case, without accents: "Café" finds "cafe". */
function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

function textOf(message: BaseMessage): string {
  const content = message.content;
  return typeof content === "string"
    ? content
    : content.map((part) => ("text" in part && typeof part.text === "string" ? part.text : "")).join(" ");
}

/** A search over threads whose messages `read` returns (the latest state of each). */
export function createThreadSearch(read: (threadId: string) => Promise<BaseMessage[]>) {
  const texts = new Map<string, { updatedAt: number; text: string }>();

  async function textFor(thread: SearchableThread): Promise<string> {
    const known = texts.get(thread.id);
    if (known?.updatedAt === thread.updatedAt) return known.text;
    const text = fold((await read(thread.id)).map(textOf).join("\n"));
    texts.set(thread.id, { updatedAt: thread.updatedAt, text });
    return text;
  }

  return {
    /** The ids of the threads that match `query`; a thread that cannot be read matches on its title only. */
    async matching(threads: SearchableThread[], query: string): Promise<Set<string>> {
      const words = fold(query).split(/\s+/).filter(Boolean);
      const found = new Set<string>();
      for (const thread of threads) {
        const title = fold(thread.title);
        if (words.every((word) => title.includes(word))) {
          found.add(thread.id);
          continue;
        }
        const text = await textFor(thread).catch(() => "");
        if (words.every((word) => title.includes(word) || text.includes(word))) found.add(thread.id);
      }
      return found;
    },
    /** Forgets what was read (another vault is open). */
    clear(): void {
      texts.clear();
    },
  };
}
