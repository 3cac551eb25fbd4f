/**
 * The throwaway clusters' template (test/support/postgres.ts): made once in
 * the shared temporary directory under a predictable name, so one found
 * there is copied only if this user (or, as root, the server's `postgres`
 * user) made it. A directory another user put there first would hand every
 * cluster its postgresql.conf, which can name a command or a library to run.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { clusterTemplate, findPostgresBin } from "../support/postgres.js";

describe("cluster template", () => {
  const saved = process.env.TMPDIR;
  const dirs: string[] = [];
  /** A temporary directory of its own, reachable by the server's user as the shared one is. */
  const scratch = (name: string) => {
    const dir = mkdtempSync(join(tmpdir(), `lgidb-${name}-`));
    chmodSync(dir, 0o755);
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    // Assigned undefined, process.env holds the string "undefined": every later file of the worker
    // (isolate: false) would then make its temporary directories under ./undefined/.
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("copies none that another user could have put in the temporary directory", async () => {
    const bin = findPostgresBin();
    const [made, planted] = [scratch("made"), scratch("planted")];
    // The run's own template (made by this user, in the shared temporary directory) copied with its owner and
    // modes as this user's template in `made`: what an initdb there would leave, without its 1-2 CPU-s.
    const shared = await clusterTemplate(bin);
    process.env.TMPDIR = made;
    const template = join(made, basename(shared));
    execFileSync("cp", ["-a", shared, template]);
    await expect(clusterTemplate(bin)).resolves.toBe(template);
    // The same files at the same name in another temporary directory, as someone else left them.
    const copy = join(planted, basename(template));
    execFileSync("cp", ["-a", template, copy]);
    process.env.TMPDIR = planted;
    chmodSync(copy, 0o755);
    await expect(clusterTemplate(bin)).rejects.toThrow(/not a cluster template this user made/);
    if (process.getuid?.() === 0) {
      // Mode 0700 but another user's: `nobody`.
      chmodSync(copy, 0o700);
      chownSync(copy, 65534, 65534);
      await expect(clusterTemplate(bin)).rejects.toThrow(/not a cluster template this user made/);
    }
    // The one made here passed the same check; this process keeps using it.
    process.env.TMPDIR = made;
    await expect(clusterTemplate(bin)).resolves.toBe(template);
  });
});
