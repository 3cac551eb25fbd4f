/**
 * Another "tab" for browser tests: a same-origin iframe that loads a test
 * page module, which publishes its API on its window under `name`.
 */

/** An iframe tab and the API its page published. */
export interface IframeTab<Api> {
  frame: HTMLIFrameElement;
  api: Api;
}

/**
 * Opens `pageModule` in a new iframe and waits (up to `timeoutMs`, default
 * 20 s) for `window[name]`. Tabs opened at once share the loading: give each
 * its 20 s (three at once: 60 s).
 */
export async function openIframeTab<Api>(
  pageModule: string,
  name: string,
  timeoutMs = 20_000,
): Promise<IframeTab<Api>> {
  const frame = document.createElement("iframe");
  frame.srcdoc = `<!doctype html><title>tab</title><script type="module" src="${pageModule}"></script>`;
  document.body.append(frame);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const api = (frame.contentWindow as unknown as Record<string, Api | undefined> | null)?.[name];
    if (api) return { frame, api };
    if (Date.now() > deadline) throw new Error("the tab page did not load");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
