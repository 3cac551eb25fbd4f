/**
 * Which texts of an item get embedded: the field-path syntax of LangGraph's
 * semantic index (`"$"`, `"a.b"`, `"a[*].b"`, `"a[0]"`, `"a[-1]"`, `"*"`,
 * `"{a,b.c}"`).
 *
 * These are ports of `tokenizePath` and `getTextAtPath` from
 * `@langchain/langgraph-checkpoint`'s `store/utils`, the versions
 * `InMemoryStore` uses. The package's root exports of the same names are an
 * older implementation (no `"$"`, no negative indices, no `{a,b}`), so
 * importing those would embed different texts than `InMemoryStore` does.
 * Keep these in step with upstream: identical texts are what make scores
 * identical.
 */

/**
 * Splits a field path into tokens: `"a[*].b"` gives `["a", "[*]", "b"]`,
 * `"{x,y}"` stays one token.
 *
 * @param path A field path as written in `index.fields` or `put(..., index)`.
 * @returns The path's tokens; `[]` for an empty path.
 */
export function tokenizePath(path: string): string[] {
  if (!path) return [];
  const tokens: string[] = [];
  let current: string[] = [];
  let i = 0;
  while (i < path.length) {
    const char = path[i]!;
    if (char === "[" || char === "{") {
      // A bracketed or braced group is one token, nesting included.
      const close = char === "[" ? "]" : "}";
      if (current.length) {
        tokens.push(current.join(""));
        current = [];
      }
      let depth = 1;
      const group = [char];
      i += 1;
      while (i < path.length && depth > 0) {
        if (path[i] === char) depth += 1;
        else if (path[i] === close) depth -= 1;
        group.push(path[i]!);
        i += 1;
      }
      tokens.push(group.join(""));
      continue;
    }
    if (char === ".") {
      if (current.length) {
        tokens.push(current.join(""));
        current = [];
      }
    } else {
      current.push(char);
    }
    i += 1;
  }
  if (current.length) tokens.push(current.join(""));
  return tokens;
}

/** A leaf as `InMemoryStore` turns it into text: scalars as strings, objects as pretty JSON; added to `out`. */
function leafText(value: unknown, out: string[]): void {
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") out.push(String(value));
  else if (typeof value === "object" && value !== null) out.push(JSON.stringify(value, null, 2));
}

/**
 * Adds the texts at `tokens[pos..]` in `obj` to `out`, in document order. One array for the whole walk: each
 * level returning its own, copied into its caller's with `push(...texts)`, copied every text once a level,
 * and past some 125,000 texts (an indexed `tags[*]` over a long list) the spread overflowed the stack.
 */
function extract(obj: unknown, tokens: readonly string[], pos: number, out: string[]): void {
  if (pos >= tokens.length) return leafText(obj, out);
  const token = tokens[pos]!;
  if (pos === 0 && token === "$") out.push(JSON.stringify(obj, null, 2));
  if (token.startsWith("[") && token.endsWith("]")) {
    if (!Array.isArray(obj)) return;
    const index = token.slice(1, -1);
    if (index === "*") {
      for (const item of obj) extract(item, tokens, pos + 1, out);
    } else {
      let idx = parseInt(index, 10);
      if (idx < 0) idx = obj.length + idx;
      if (idx >= 0 && idx < obj.length) extract(obj[idx], tokens, pos + 1, out);
    }
  } else if (token.startsWith("{") && token.endsWith("}")) {
    if (typeof obj !== "object" || obj === null) return;
    const fields = token
      .slice(1, -1)
      .split(",")
      .map((field) => field.trim());
    for (const field of fields) {
      const nested = tokenizePath(field);
      if (!nested.length) continue;
      let current: unknown = obj;
      for (const part of nested) {
        if (current && typeof current === "object" && part in current) {
          current = (current as Record<string, unknown>)[part];
        } else {
          current = undefined;
          break;
        }
      }
      // Unlike a path leaf, a selected `null` becomes the text "null" upstream.
      if (current === null) out.push("null");
      else if (current !== undefined) leafText(current, out);
    }
  } else if (token === "*") {
    if (Array.isArray(obj)) {
      for (const item of obj) extract(item, tokens, pos + 1, out);
    } else if (typeof obj === "object" && obj !== null) {
      for (const value of Object.values(obj)) extract(value, tokens, pos + 1, out);
    }
  } else if (typeof obj === "object" && obj !== null && token in obj) {
    extract((obj as Record<string, unknown>)[token], tokens, pos + 1, out);
  }
}

/**
 * The texts found at `path` in `obj`, in document order. `"$"` (or an empty
 * path) is the whole value as pretty-printed JSON.
 *
 * @param obj An item's value.
 * @param path A path string, or its tokens from {@link tokenizePath}.
 */
export function getTextAtPath(obj: unknown, path: string | readonly string[]): string[] {
  if (!path || path === "$") return [JSON.stringify(obj, null, 2)];
  const tokens = typeof path === "string" ? tokenizePath(path) : path;
  const out: string[] = [];
  extract(obj, tokens, 0, out);
  return out;
}

/** One field path, ready to extract: its label and its tokens. */
export type IndexPath = readonly [path: string, tokens: readonly string[]];

/**
 * Tokenizes the paths of `index.fields` (default `["$"]`) the way
 * `InMemoryStore` does: `"$"` stays the single token `"$"`.
 */
export function configPaths(fields: readonly string[] | undefined): IndexPath[] {
  return (fields ?? ["$"]).map((path) => [path, path === "$" ? [path] : tokenizePath(path)] as const);
}

/** Tokenizes a `put(..., index)` override. */
export function overridePaths(fields: readonly string[]): IndexPath[] {
  return fields.map((path) => [path, tokenizePath(path)] as const);
}

/**
 * The texts to embed for one value, keyed by vector label: a path that
 * yields several texts gets `path.0`, `path.1`, …, one that yields a single
 * text keeps its own name (the labels `InMemoryStore` uses). A label seen
 * twice keeps the later text.
 */
export function textsToEmbed(value: unknown, paths: readonly IndexPath[]): Map<string, string> {
  const texts = new Map<string, string>();
  for (const [path, tokens] of paths) {
    const found = getTextAtPath(value, tokens);
    if (found.length > 1) found.forEach((text, i) => texts.set(`${path}.${i}`, text));
    else if (found.length === 1) texts.set(path, found[0]!);
  }
  return texts;
}
