/**
 * What a failed encode says: the path to the value that could not be stored,
 * or the cycle. Only a failing `dumpsTyped` needs this, so it loads then
 * (with `import()`), not with the serializer.
 */
import type { TooDeep, Unencodable } from "./encoder.js";

/**
 * The encoder's error classes and depth limit, handed over by the serializer
 * rather than imported: a lazy chunk that imports modules of the serializer
 * (encoder.ts, options.ts) made Rolldown split msgpackr out of an app's
 * up-front chunk into a file of its own (docs/benchmarks.md, "Bundle").
 */
export interface EncoderFacts {
  Unencodable: typeof Unencodable;
  TooDeep: typeof TooDeep;
  maxDepth: number;
}

/** Diagnostics must not replace the error they explain (a getter may throw). */
export function safely<T>(diagnose: () => T): T | undefined {
  try {
    return diagnose();
  } catch {
    return undefined;
  }
}

/** The children the diagnostics below follow: what the encoder would visit. */
export function childrenOf(value: object): Array<[string, unknown]> {
  if (value instanceof Map) {
    return [...value].flatMap(([key, entry], i): Array<[string, unknown]> => [
      [`<Map key #${i}>`, key],
      [`<Map value #${i}>`, entry],
    ]);
  }
  if (value instanceof Set) return [...value].map((member, i): [string, unknown] => [`<Set member #${i}>`, member]);
  if (Array.isArray(value)) return value.map((child, i): [string, unknown] => [`[${i}]`, child]);
  const children = Object.keys(value).map((key): [string, unknown] => [
    /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`,
    (value as Record<string, unknown>)[key],
  ]);
  if (value instanceof Error && Object.hasOwn(value, "cause")) {
    children.push([".cause", value.cause]);
  }
  return children;
}

/** Path (`$.a[0].b`) to the first value matching `match`, for error messages. */
export function findPath(root: unknown, match: (value: unknown) => boolean, maxDepth: number): string | undefined {
  const done = new Set<object>();
  const visit = (value: unknown, path: string, depth: number): string | undefined => {
    if (match(value)) return path;
    if (typeof value !== "object" || value === null || done.has(value) || depth > maxDepth) return undefined;
    done.add(value);
    for (const [step, child] of childrenOf(value)) {
      const found = visit(child, path + step, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return visit(root, "$", 0);
}

/** Path of a reference back to an ancestor, if the value has a cycle. */
export function findCycle(root: unknown): string | undefined {
  const ancestors = new Set<object>();
  const done = new Set<object>();
  const visit = (value: unknown, path: string): string | undefined => {
    if (typeof value !== "object" || value === null || done.has(value)) return undefined;
    if (ancestors.has(value)) return path;
    ancestors.add(value);
    for (const [step, child] of childrenOf(value)) {
      const found = visit(child, path + step);
      if (found) return found;
    }
    ancestors.delete(value);
    done.add(value);
    return undefined;
  };
  return visit(root, "$");
}

/**
 * The SerializationError's message for a failed encode, naming the path to
 * the value (or the cycle) that could not be stored; undefined for an error
 * the encoder did not raise itself (the serializer tells it as it is).
 */
export function encodeErrorMessage(error: unknown, root: unknown, encoder: EncoderFacts): string | undefined {
  if (error instanceof encoder.Unencodable) {
    const path =
      safely(() => findPath(root, (value) => value === error.value, encoder.maxDepth)) ??
      "$ (inside a toJSON() result)";
    const [what, advice] = unencodableWords(error);
    return `MsgpackSerializer cannot store ${what} at ${path}.${advice}`;
  }
  if (error instanceof encoder.TooDeep) {
    const cycle = safely(() => findCycle(root));
    return cycle
      ? `MsgpackSerializer cannot store a circular reference: ${cycle} refers back to an object that contains it. Break the cycle before saving.`
      : `MsgpackSerializer cannot store a value nested more than ${encoder.maxDepth} levels deep.`;
  }
  return undefined;
}

/** What a refused value is ("a function (\"f\")") and what to do about it (with a leading space, or ""). */
function unencodableWords({ value, reason, name, detail }: Unencodable): [what: string, advice: string] {
  switch (reason) {
    case "function": {
      const fn = value as { name?: string };
      return [`a function (${fn.name ? `"${fn.name}"` : "anonymous"})`, ""];
    }
    case "type":
      return [`a ${typeof value} (${String(value)})`, ""];
    case "lc-record":
      return [
        `a LangChain ${name} whose toJSON() gives a ${detail} record`,
        " Its lc_serializable is false, so load() could not revive it: register the class with types, or store plain data.",
      ];
    case "lc-id":
      return [
        `a LangChain ${name} with id ${detail}`,
        " load() only revives langchain_core and langchain classes: register the class with types instead.",
      ];
    default: {
      const hint =
        reason === "class-json"
          ? " It has toJSON(): store value.toJSON() yourself if that plain shape is what you want."
          : "";
      return [
        `an instance of class ${name}`,
        ` It would come back as a plain object: register it with new MsgpackSerializer({ types: [${name}] }) to keep it a ${name}, or store plain data.${hint}`,
      ];
    }
  }
}
