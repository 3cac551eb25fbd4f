/**
 * A set of listeners, told in turn: the fan-out behind the saver's change
 * feed, the sync client's status and the runs' channel.
 */

/** A listener of values of type `T`. */
export type Listener<T> = (value: T) => void;

/**
 * Listeners told in the order they were added. One that throws does not
 * stop the others, nor the write or round that told them: its error is
 * thrown again on a microtask, so it is reported as uncaught (as an event
 * listener's error is) instead of being lost.
 */
export class Listeners<T> {
  readonly #set = new Set<Listener<T>>();

  /** Adds `listener`; returns the function that removes it. */
  add(listener: Listener<T>): () => void {
    this.#set.add(listener);
    return () => void this.#set.delete(listener);
  }

  /** Tells every listener present now (one added or removed meanwhile does not change this round). */
  deliver(value: T): void {
    for (const listener of [...this.#set]) {
      try {
        listener(value);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  /** Removes every listener. */
  clear(): void {
    this.#set.clear();
  }
}
