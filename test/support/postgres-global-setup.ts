/**
 * Vitest globalSetup of the `node` project: one throwaway PostgreSQL server
 * per test run (see `postgres.ts`), unless `POSTGRES_URL` names one.
 *
 * The server starts in the background (about 2 s) while the test files load;
 * the tests that need it wait for it through `acquirePostgres()`. Teardown
 * stops it and deletes its directory. Missing binaries are reported to those
 * tests (and only them) with what to install.
 */
import type { TestProject } from "vitest/node";
import { findPostgresBin, startPostgresInBackground } from "./postgres.js";

export default function setup(project: TestProject): (() => Promise<void>) | undefined {
  if (process.env.POSTGRES_URL) {
    project.provide("postgres", { url: process.env.POSTGRES_URL });
    return undefined;
  }
  try {
    findPostgresBin();
  } catch (error) {
    project.provide("postgres", { error: (error as Error).message });
    return undefined;
  }
  const server = startPostgresInBackground();
  project.provide("postgres", server.provided);
  return () => server.stop();
}
