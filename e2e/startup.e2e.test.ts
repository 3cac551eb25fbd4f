/**
 * What a first visit loads before the composer is usable: only the scripts
 * demo/index.html names (the entry and its preloads; nothing imported on demand,
 * such as the code highlighter, comes early), and no more compressed bytes
 * of them than a bound a little above today's. Bytes, not time: they do not
 * depend on how busy the machine is, so the test runs in the parallel pass.
 */
import { expect, test } from "vitest";
import { useHarness } from "./support.js";

const harness = useHarness();

/**
 * The up-front scripts' compressed size may grow to this (bytes as served by
 * `vite preview`, gzip): 470 KB on 2026-12-06 (470,263 B; 452 KB earlier), of
 * which about 220 KB is LangChain and LangGraph.
 */
const UP_FRONT_BOUND = 475_000;

test("a first visit loads only the page's own scripts before the composer is usable, within the byte bound", async () => {
  const h = harness();
  await h.context.addInitScript(() => {
    // The moment the composer can take a message: drawn and enabled.
    new MutationObserver((_, observer) => {
      const composer = document.querySelector<HTMLTextAreaElement>('[data-testid="composer"]');
      if (!composer || composer.disabled) return;
      performance.mark("composer-usable");
      observer.disconnect();
    }).observe(document, { subtree: true, childList: true, attributes: true });
  });
  const page = await h.page();
  await page.waitForFunction(() => performance.getEntriesByName("composer-usable").length > 0);
  const { scripts, named } = await page.evaluate(() => {
    const usable = performance.getEntriesByName("composer-usable")[0]!.startTime;
    const scripts = performance
      .getEntriesByType("resource")
      .filter((entry) => entry.name.endsWith(".js") && entry.startTime < usable)
      .map((entry) => ({
        path: new URL(entry.name).pathname,
        bytes: (entry as PerformanceResourceTiming).encodedBodySize,
      }));
    const named = Array.from(
      document.querySelectorAll<HTMLScriptElement | HTMLLinkElement>("script[src], link[rel=modulepreload]"),
      (el) => new URL(el instanceof HTMLScriptElement ? el.src : el.href).pathname,
    );
    return { scripts, named };
  });
  expect(scripts.map((script) => script.path).filter((path) => !named.includes(path))).toEqual([]);
  const bytes = scripts.reduce((sum, script) => sum + script.bytes, 0);
  console.log(`up-front scripts: ${scripts.length}, ${bytes} B compressed (bound ${UP_FRONT_BOUND} B)`);
  expect(bytes).toBeGreaterThan(0);
  expect(bytes).toBeLessThan(UP_FRONT_BOUND);
});
