/**
 * `@playwright/test`, loaded only where it is installed. The kit's helpers
 * take a `Page` and need only `playwright`; `langgraphTest` and its `expect`
 * are Playwright Test's, so they need the test runner. A project without it
 * (a script driving a browser, Vitest, Cucumber) imports the entry all the
 * same, and gets an error naming the package when it uses the fixture.
 */
import { createRequire } from "node:module";
import type * as PlaywrightTest from "playwright/test";

/** What `@playwright/test` exports (its types are `playwright/test`'s). */
export type PlaywrightTestModule = typeof PlaywrightTest;

const RUNNER = "@playwright/test";

/**
 * `@playwright/test`, or the error saying why it is not there. Synchronous, with
 * `require` (the runner is CommonJS, so this is the instance the test file
 * imports): the fixture must be Playwright's own `test` by the time the entry
 * has loaded, as the runner collects tests while it loads the test file, and
 * an `await import()` at the top would make the entry one that `require`
 * cannot load (a TypeScript test file that Playwright compiles to CommonJS, on
 * a Node that can `require` ES modules).
 */
export function loadTestRunner(): PlaywrightTestModule | Error {
  const require = createRequire(import.meta.url);
  try {
    require.resolve(RUNNER);
  } catch (error) {
    return new Error(
      `langgraphTest and its expect are Playwright Test's: they need ${RUNNER} (1.51 or later), which is not installed here. ` +
        `Install it with \`npm install --save-dev ${RUNNER}\`. ` +
        "The helpers that take a Page (seedThread, readThreadState, waitForThreadIdle, …) need only playwright.",
      { cause: error },
    );
  }
  try {
    return require(RUNNER) as PlaywrightTestModule;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return new Error(`langgraphTest needs ${RUNNER}, which is installed but failed to load: ${reason}`, {
      cause: error,
    });
  }
}

/**
 * A stand-in for `langgraphTest` without the runner: calling it, or reading
 * any of its properties (`use`, `extend`, `expect`, `describe`…), throws
 * `error`. Symbol keys answer `undefined`, so that printing it does not throw.
 */
export function unavailable<T>(error: Error): T {
  const fail = (): never => {
    throw new Error(error.message, { cause: error.cause });
  };
  return new Proxy(function langgraphTest() {}, {
    apply: fail,
    construct: fail,
    get: (_target, key) => (typeof key === "symbol" ? undefined : fail()),
    set: fail,
    has: fail,
    defineProperty: fail,
  }) as T;
}
