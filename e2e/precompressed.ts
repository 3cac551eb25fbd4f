/**
 * The built demo's scripts and styles gzipped once, and served from those
 * files. `vite preview` gzips every response as it sends it: about 80 ms of
 * CPU for the 1.6 MB a fresh context loads, in the process that runs the
 * tests, and the e2e phase loads a fresh context well over a hundred times.
 * The bytes a page receives are the same (gzip at zlib's default level, as
 * the preview's middleware uses), as are the headers the tests read.
 */
import { createReadStream, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { Plugin } from "vite";

/** The hashed, never-changing files served precompressed: `/assets/*` and `/e2e/*` scripts and styles. */
const FOLDERS = ["assets", "e2e"];
const TYPES: Record<string, string> = { ".js": "text/javascript", ".css": "text/css" };

const typeOf = (name: string): string | undefined => TYPES[name.slice(name.lastIndexOf("."))];

/** Writes `<file>.gz` beside each script and style of the build in `outDir` (once: kept with the build). */
export function precompress(outDir: string): void {
  for (const folder of FOLDERS)
    for (const name of readdirSync(join(outDir, folder))) {
      if (!typeOf(name)) continue;
      const file = join(outDir, folder, name);
      writeFileSync(`${file}.gz`, gzipSync(readFileSync(file)));
    }
}

/**
 * A preview-server plugin that answers a GET of a file {@link precompress}
 * wrote from its `.gz`, with the headers `vite preview` sends (its
 * `preview.headers`, `Cache-Control: no-cache`, an ETag honoured by
 * `If-None-Match`); anything else goes on to Vite's own middlewares.
 */
export function servePrecompressed(outDir: string): Plugin {
  return {
    name: "e2e-precompressed",
    configurePreviewServer(server) {
      const headers = server.config.preview.headers ?? {};
      server.middlewares.use((req: IncomingMessage, res: ServerResponse, next: () => void) => {
        const path = decodeURIComponent((req.url ?? "").split("?")[0]!);
        const [, folder, name, ...rest] = path.split("/");
        const type = name ? typeOf(name) : undefined;
        if (req.method !== "GET" || !type || rest.length > 0 || !FOLDERS.includes(folder!)) return next();
        if (!/\bgzip\b/.test(String(req.headers["accept-encoding"]))) return next();
        const gz = join(outDir, folder!, `${name!}.gz`);
        let size: number;
        try {
          size = statSync(gz).size;
        } catch {
          return next();
        }
        const etag = `W/"${size}-${statSync(join(outDir, folder!, name!)).mtimeMs}"`;
        for (const [key, value] of Object.entries(headers)) res.setHeader(key, value as string);
        res.setHeader("Cache-Control", "no-cache");
        res.setHeader("ETag", etag);
        if (req.headers["if-none-match"] === etag) {
          res.statusCode = 304;
          res.end();
          return;
        }
        res.setHeader("Content-Type", type);
        res.setHeader("Content-Encoding", "gzip");
        res.setHeader("Content-Length", size);
        createReadStream(gz).pipe(res);
      });
    },
  };
}
