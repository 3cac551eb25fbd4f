/**
 * The script the `./playwright` helpers inject into pages: page.ts and what
 * it imports, as one minified IIFE. Node only. The package build writes it
 * to `dist/playwright-page.iife.js` (scripts/build-playwright-bundle.mjs);
 * running from the sources, it is built on first use and kept under
 * node_modules/.vite for the next process. Internal: not exported
 * by any entry.
 */

/** The prebuilt script's file name, in `dist/` next to `playwright.js`. */
export const PAGE_BUNDLE_FILE = "playwright-page.iife.js";

let bundle: Promise<string> | undefined;

/** The script to inject: the prebuilt file of the installed package, else a build (cached). */
export function pageBundle(): Promise<string> {
  bundle ??= loadBundle().catch((error: unknown) => {
    bundle = undefined;
    throw error;
  });
  return bundle;
}

async function loadBundle(): Promise<string> {
  const fs = (await import("node:fs/promises" as string)) as { readFile(path: URL, encoding: "utf8"): Promise<string> };
  try {
    // This module is dist/playwright/bundle.js; the script sits in dist/.
    return await fs.readFile(new URL(`../${PAGE_BUNDLE_FILE}`, import.meta.url), "utf8");
  } catch {
    // A .ts module runs from this repository's sources (its own tests), never from an installed package.
    if (!import.meta.url.endsWith(".ts")) return buildPageBundle();
    // The build cache serves only those runs, so its module stays out of dist/ (tsconfig.build.json) and
    // is imported by path, here alone: a literal import would put it back in the package.
    const { cachedBuild } = (await import(await sibling("bundle-cache"))) as { cachedBuild: CachedBuild };
    return cachedBuild(
      new URL("../", import.meta.url),
      // Vite's TypeScript transform reads tsconfig.json's options too.
      [new URL("../../package-lock.json", import.meta.url), new URL("../../tsconfig.json", import.meta.url)],
      new URL("../../node_modules/.vite/playwright-page/", import.meta.url),
      buildPageBundle,
    );
  }
}

/**
 * The build cache of runs from the sources (bundle-cache.ts), which only
 * they load: the script built from the files under `src` and `inputs`, kept
 * in `dir` for the next process.
 */
export type CachedBuild = (src: URL, inputs: URL[], dir: URL, build: () => Promise<string>) => Promise<string>;

/** The part of Vite's `build()` result used here. */
interface ViteBuildOutput {
  output: { type: string; code?: string }[];
}

/** The page module beside this one: the TypeScript source, else the compiled file. */
async function sibling(name: string): Promise<string> {
  const fs = (await import("node:fs/promises" as string)) as { access(path: URL): Promise<void> };
  const source = new URL(`./${name}.ts`, import.meta.url);
  const url = await fs.access(source).then(
    () => source,
    () => new URL(`./${name}.js`, import.meta.url),
  );
  return decodeURIComponent(url.pathname);
}

/**
 * Builds the page script with Vite. `@langchain/core/load` resolves to
 * plain-load.ts (values stay records), which leaves `@langchain/core` out:
 * the script needs only the saver's read and write paths and the importer.
 */
export async function buildPageBundle(): Promise<string> {
  let vite: { build(config: Record<string, unknown>): Promise<unknown> };
  try {
    vite = (await import("vite" as string)) as typeof vite;
  } catch (error) {
    throw new Error(
      `langgraph-checkpoint-indexeddb/playwright: the prebuilt ${PAGE_BUNDLE_FILE} is missing and Vite is not installed to build it. Reinstall the package, or install vite.`,
      { cause: error },
    );
  }
  const pagePath = await sibling("page");
  const plainLoad = await sibling("plain-load");
  // A virtual entry that installs the API; lib mode hands it over as a path under the root.
  const entryName = "langgraph-indexeddb-playwright-entry.js";
  const entryId = `\0${entryName}`;
  const result = await vite.build({
    configFile: false,
    logLevel: "silent",
    mode: "production",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    plugins: [
      {
        name: "langgraph-indexeddb-playwright-entry",
        enforce: "pre",
        resolveId: (id: string) =>
          id.endsWith(entryName) ? entryId : id === "@langchain/core/load" ? plainLoad : undefined,
        load: (id: string) =>
          id === entryId
            ? `import { installPageApi } from ${JSON.stringify(pagePath)};\ninstallPageApi();\n`
            : undefined,
      },
    ],
    build: {
      write: false,
      target: "es2022",
      minify: true,
      // Errors keep their class names (DecryptionError, ThreadImportError…) in the page and in Playwright's report.
      rolldownOptions: { output: { keepNames: true } },
      sourcemap: false,
      copyPublicDir: false,
      reportCompressedSize: false,
      lib: {
        entry: entryName,
        formats: ["iife"],
        name: "LanggraphIndexedDBPlaywright",
        fileName: () => PAGE_BUNDLE_FILE,
      },
    },
  });
  const outputs = (Array.isArray(result) ? result : [result]) as ViteBuildOutput[];
  const chunk = outputs
    .flatMap((output) => output.output)
    .find((item) => item.type === "chunk" && typeof item.code === "string");
  if (!chunk?.code) throw new Error("langgraph-checkpoint-indexeddb/playwright: the Vite build produced no script.");
  return chunk.code;
}
