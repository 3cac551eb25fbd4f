/**
 * The demo's Content-Security-Policy, served by the dev server and the
 * preview server as a header and written into index.html as a
 * `<meta http-equiv>` (so a copy of `demo/dist` on any static host keeps it).
 *
 * - Scripts and styles come only from the app's own origin: no inline
 *   script, no `eval` (the package needs neither), no inline style.
 * - `worker-src blob:`: the package's OPFS journal starts its worker from a
 *   blob URL; `'self'` covers the service worker.
 * - `connect-src`: the model endpoint is whatever the user types in
 *   Settings, so any `https:` origin is allowed, plus plain `http:`/`ws:` on
 *   localhost for a local model server (Ollama) or the sync server. This
 *   policy does not stop the page talking to an https server; it stops
 *   injected code from running in it.
 * - `img-src` has no remote origins: a model's Markdown answer can't load
 *   (and leak data through) an image from elsewhere.
 */
const directives: Record<string, string[]> = {
  "default-src": ["'self'"],
  "script-src": ["'self'"],
  "style-src": ["'self'"],
  "img-src": ["'self'", "data:", "blob:"],
  "font-src": ["'self'"],
  "connect-src": [
    "'self'",
    "https:",
    "http://localhost:*",
    "http://127.0.0.1:*",
    "ws://localhost:*",
    "ws://127.0.0.1:*",
  ],
  "worker-src": ["'self'", "blob:"],
  "manifest-src": ["'self'"],
  "object-src": ["'none'"],
  "base-uri": ["'none'"],
  "form-action": ["'none'"],
};

/**
 * Why this policy's `connect-src` refuses a request from a page at `origin`
 * to `url`, in words, or undefined when it allows it. Settings check a
 * server's address with it first: the browser's refusal reaches the page
 * only as a failed fetch, which read as a server that does not answer.
 */
export function connectRefusal(url: string, origin: string): string | undefined {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return undefined;
  }
  // Not a server's address at all ("localhost:8787" reads as scheme "localhost:"): for its user to refuse.
  if (!["http:", "https:", "ws:", "wss:"].includes(target.protocol)) return undefined;
  const allowed = directives["connect-src"]!.some((source) => {
    if (source === "'self'") return target.origin === origin;
    if (/^[a-z]+:$/.test(source)) return target.protocol === source;
    const match = /^([a-z]+:)\/\/([^:/]+)(?::(\*|\d+))?$/.exec(source);
    return (
      match !== null &&
      target.protocol === match[1] &&
      target.hostname === match[2] &&
      (match[3] === "*" || target.port === (match[3] ?? ""))
    );
  });
  if (allowed) return undefined;
  return "This page may use plain http:// only for a server on this machine (localhost or 127.0.0.1): use https:// for one on another machine.";
}

function serialize(entries: Record<string, string[]>): string {
  return Object.entries(entries)
    .map(([name, values]) => `${name} ${values.join(" ")}`)
    .join("; ");
}

/** The policy for `<meta http-equiv>` (which ignores `frame-ancestors`). */
export const CSP_META = serialize(directives);

/** The policy for the `Content-Security-Policy` header: the same, and no framing. */
export const CSP_HEADER = serialize({ ...directives, "frame-ancestors": ["'none'"] });
