// Zod (inside LangChain) probes whether it may compile parsers with
// `new Function`, in the built app as soon as its modules load. The page's
// Content-Security-Policy has no 'unsafe-eval' (demo/csp.ts), so the probe
// would be a CSP violation. Zod reads its settings from this global, shared
// by every copy of it: "jitless" tells it not to try. A classic script, so
// it runs before any module of the app.
globalThis.__zod_globalConfig = Object.assign(globalThis.__zod_globalConfig ?? {}, { jitless: true });
