/**
 * Counts calls to built-in functions while a piece of code runs, so a test
 * can say "one pass, not one call per character" without measuring time
 * (wall-time bounds fail on a loaded machine). A plain counter, not
 * `vi.spyOn`: a spy keeps every call's arguments, millions of them for the
 * per-character code these tests guard against.
 */

/** A method to count: its owner (a prototype or a namespace) and its name. */
export type Counted = readonly [owner: object, name: string];

/**
 * Runs `work` with each method of `counted` wrapped by a counter, puts the
 * originals back once it settles (even when it throws), and returns the
 * call counts in the order given. An async `work` counts every call until
 * it settles, whoever makes it: narrow with `which`. `which(self, args)` narrows what counts (say, only
 * decoders of one encoding); by default every call does.
 */
export async function countCalls<T>(
  counted: readonly Counted[],
  work: () => T | Promise<T>,
  which: (self: unknown, args: unknown[]) => boolean = () => true,
): Promise<{ result: T; calls: number[] }> {
  const calls = counted.map(() => 0);
  const originals = counted.map(([owner, name]) => Reflect.get(owner, name) as (...args: unknown[]) => unknown);
  counted.forEach(([owner, name], i) => {
    const original = originals[i]!;
    Reflect.set(owner, name, function (this: unknown, ...args: unknown[]) {
      if (which(this, args)) calls[i]!++;
      return original.apply(this, args);
    });
  });
  try {
    return { result: await work(), calls };
  } finally {
    counted.forEach(([owner, name], i) => Reflect.set(owner, name, originals[i]));
  }
}
