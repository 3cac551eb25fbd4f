/**
 * The Playwright kit's page script, built from the sources and kept on disk
 * (see cachedBuild). Only runs from this repository's sources load it
 * (bundle.ts imports it by path when it is itself a .ts module): the package
 * build leaves it out of dist/ (tsconfig.build.json), where no user path
 * could reach it.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs/promises";
import type { CachedBuild } from "./bundle.js";

/**
 * The script built from the sources, kept on disk for the next process:
 * every Playwright worker and Vitest worker that runs the kit from the
 * sources would build it again (about 2.4 CPU-s each). The file in `dir` is
 * named by a hash of every file under `src` (tests aside) and of `inputs`,
 * the files outside it that the build reads (the lockfile, tsconfig.json),
 * so any change to the sources, the dependencies or the compiler's options
 * builds anew, and a stale script is never read.
 */
export const cachedBuild: CachedBuild = async (src, inputs, dir, build) => {
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
};
