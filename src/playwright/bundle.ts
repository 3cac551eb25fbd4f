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
    return cachedBuild(
      new URL("../", import.meta.url),
      // Vite's TypeScript transform reads tsconfig.json's options too.
      [new URL("../../package-lock.json", import.meta.url), new URL("../../tsconfig.json", import.meta.url)],
      new URL("../../node_modules/.vite/playwright-page/", import.meta.url),
      buildPageBundle,
    );
  }
}

/** The parts of node:fs/promises the build cache uses (the package's build has no Node types). */
interface CacheFs {
  readdir(
    path: URL,
    options: { recursive: true; withFileTypes: true },
  ): Promise<{ name: string; parentPath: string; isFile(): boolean }[]>;
  readdir(path: URL): Promise<string[]>;
  readFile(path: URL): Promise<Uint8Array>;
  readFile(path: URL, encoding: "utf8"): Promise<string>;
  mkdir(path: URL, options: { recursive: true }): Promise<unknown>;
  writeFile(path: URL, data: string): Promise<void>;
  rename(from: URL, to: URL): Promise<void>;
  rm(path: URL, options: { force: true }): Promise<void>;
}

/** node:crypto's hash, as the build cache uses it. */
interface Hash {
  update(data: string | Uint8Array): Hash;
  digest(encoding: "hex"): string;
}

/**
 * The script built from the sources, kept on disk for the next process:
 * every Playwright worker and Vitest worker that runs the kit from the
 * sources would build it again (about 2.4 CPU-s each). The file in `dir` is
 * named by a hash of every file under `src` (tests aside) and of `inputs`,
 * the files outside it that the build reads (the lockfile, tsconfig.json),
 * so any change to the sources, the dependencies or the compiler's options
 * builds anew, and a stale script is never read.
 */
export async function cachedBuild(src: URL, inputs: URL[], dir: URL, build: () => Promise<string>): Promise<string> {
  const fs = (await import("node:fs/promises" as string)) as CacheFs;
  const { createHash } = (await import("node:crypto" as string)) as {
    createHash(algorithm: string): Hash;
  };
  const sourcesHash = async (): Promise<string> => {
    // Relative paths, so that a file renamed or moved changes the hash too; tests never enter the script.
    const files = (await fs.readdir(src, { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile() && !entry.name.endsWith(".test.ts"))
      .map((entry) =>
        new URL(entry.name, `file://${entry.parentPath.replace(/\/?$/, "/")}`).href.slice(src.href.length),
      )
      .sort();
    const contents = await Promise.all(files.map((file) => fs.readFile(new URL(file, src))));
    const hash = createHash("sha256");
    files.forEach((file, i) => hash.update(`${file}\0${contents[i]!.length}\0`).update(contents[i]!));
    for (const input of inputs) {
      const bytes = await fs.readFile(input).catch(() => new Uint8Array());
      hash.update(`${input.href}\0${bytes.length}\0`).update(bytes);
    }
    return hash.digest("hex").slice(0, 32);
  };
  const key = await sourcesHash();
  const cached = new URL(`${key}.js`, dir);
  const hit = await fs.readFile(cached, "utf8").catch(() => undefined);
  if (hit !== undefined) return hit;
  const code = await build();
  // A source changed during the build (an editor's save, a checkout): the script may be of either
  // version, so it is not kept under the hash of the first, where a later process could read it.
  if ((await sourcesHash()) !== key) return code;
  // Written aside, then renamed: a process reading it at the same time sees the whole file or none.
  const partial = new URL(`${cached.href}.${Math.random().toString(36).slice(2)}.partial`);
  try {
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(partial, code);
    await fs.rename(partial, cached);
    // One script is kept: the older ones were built from sources as they no longer are.
    for (const name of await fs.readdir(dir))
      if (!cached.href.endsWith(`/${name}`)) await fs.rm(new URL(name, dir), { force: true });
  } catch {
    // A cache that cannot be written (a read-only checkout) only costs the next process a build.
  }
  return code;
}

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
