/**
 * What the Chromium (Playwright) and Firefox (puppeteer-core) tests of the
 * example share: functions run in the page, and the console errors a test
 * expects.
 */
import { expect } from "vitest";

/** In the page: the messages on screen, as `type: text`. */
export function messagesOnScreen(nodes: Element[]): string[] {
  return nodes.map(
    (node) => `${(node as HTMLElement).dataset.role}: ${node.querySelector("[data-testid=text]")?.textContent}`,
  );
}

/** In the page: the last answer on screen if it is a strict, non-empty prefix of `full` (it is streaming), else false. */
export function streamingPart(full: string): string | false {
  const answers = document.querySelectorAll("[data-testid=message][data-role=ai] [data-testid=text]");
  const text = answers[answers.length - 1]?.textContent ?? "";
  return text.length > 0 && text.length < full.length && full.startsWith(text) ? text : false;
}

/** In the page: whether a request the service worker has not precached fails (the network is off). */
export function networkIsOff(): Promise<boolean> {
  return fetch(`/not-precached-${Date.now()}`).then(
    () => false,
    () => true,
  );
}

/** Removes from `errors` the one console error a test expects, and fails if it was not logged. */
export function takeExpected(errors: string[], expected: (error: string) => boolean): void {
  const at = errors.findIndex(expected);
  expect(at, "the expected console error").toBeGreaterThanOrEqual(0);
  errors.splice(at, 1);
}
