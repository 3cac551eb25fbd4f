/**
 * The page script's build cache for runs from the sources (cachedBuild): a
 * process reads the build of the same sources instead of building again,
 * and any change to a source, a file's name, the lockfile or tsconfig.json
 * builds anew.
 * The build here is a counter that returns a new script each call, so a
 * read that should have been a build shows as a script from before.
 */
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cachedBuild } from "./bundle.js";

describe("cachedBuild", () => {
  let root: string;
  let builds: number;
  const build = async () => `script ${++builds}`;
  const url = (path: string) => pathToFileURL(join(root, path) + (path.endsWith("/") ? "/" : ""));
  const inputs = () => [url("package-lock.json"), url("tsconfig.json")];
  const load = () => cachedBuild(url("src/"), inputs(), url("cache/"), build);

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "page-bundle-cache-"));
    builds = 0;
    await mkdir(join(root, "src", "playwright"), { recursive: true });
    await writeFile(join(root, "src", "index.ts"), "export const a = 1;\n");
    await writeFile(join(root, "src", "playwright", "page.ts"), "export const b = 2;\n");
    await writeFile(join(root, "package-lock.json"), '{"lockfileVersion":3}\n');
    await writeFile(join(root, "tsconfig.json"), '{"compilerOptions":{}}\n');
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it("builds once for the same sources, and keeps one script", async () => {
    expect(await load()).toBe("script 1");
    expect(await load()).toBe("script 1");
    expect(builds).toBe(1);
    expect(await readdir(join(root, "cache"))).toHaveLength(1);
  });

  it("builds anew when a nested source, a name, the lockfile or tsconfig.json changes, and drops the old script", async () => {
    await load();
    await writeFile(join(root, "src", "playwright", "page.ts"), "export const b = 3;\n");
    expect(await load()).toBe("script 2");
    await rename(join(root, "src", "index.ts"), join(root, "src", "main.ts"));
    expect(await load()).toBe("script 3");
    await writeFile(join(root, "package-lock.json"), '{"lockfileVersion":4}\n');
    expect(await load()).toBe("script 4");
    // The compiler's options change the script too (class fields, decorators, JSX).
    await writeFile(join(root, "tsconfig.json"), '{"compilerOptions":{"useDefineForClassFields":false}}\n');
    expect(await load()).toBe("script 5");
    expect(await readdir(join(root, "cache"))).toHaveLength(1);
    // Back to sources it has built before: the dropped script is built again, not found stale.
    await writeFile(join(root, "package-lock.json"), '{"lockfileVersion":3}\n');
    expect(await load()).toBe("script 6");
  });

  it("keeps no script built while a source changed under it (it could be read back for other sources)", async () => {
    const page = join(root, "src", "playwright", "page.ts");
    const editedMidBuild = async () => {
      await writeFile(page, "export const b = 3;\n");
      return build();
    };
    // Hashed with b = 2, built from b = 3 (an editor's save, a checkout, during the build).
    expect(await cachedBuild(url("src/"), inputs(), url("cache/"), editedMidBuild)).toBe("script 1");
    await writeFile(page, "export const b = 2;\n");
    expect(await load()).toBe("script 2");
  });

  it("does not build again for a test file, which never enters the script", async () => {
    await load();
    await writeFile(join(root, "src", "playwright", "page.node.test.ts"), "it('x', () => {});\n");
    expect(await load()).toBe("script 1");
  });
});
