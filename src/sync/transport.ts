/**
 * HTTP calls of the sync protocol: bearer token, MessagePack bodies, a
 * timeout per request, and errors that say whether retrying can help.
 */
import { IndexedDBCheckpointError, nameErrors } from "../core/errors.js";
import {
  SYNC_MEDIA_TYPE,
  SYNC_PATH,
  SYNC_PROTOCOL_VERSION,
  MAX_THREADS_PAGE,
  decodeBody,
  encodeBody,
  type HelloResponse,
  type KeyResponse,
  type PullResponse,
  type PushRequest,
  type PushResponse,
  type WireThread,
} from "./protocol.js";
import { parsePullResponse, parseThreadsResponse } from "./protocol-checks.js";

/**
 * A sync request that failed. `offline` (no answer: network down, server
 * unreachable, timeout), server errors (5xx), 429 and 408 (a request too
 * slow to arrive whole) are `retryable`; a refused
 * token (401) or a request the server rejects (4xx) is not.
 */
export class SyncError extends IndexedDBCheckpointError {
  /** HTTP status, or 0 when no answer came. */
  readonly status: number;
  /** The server's error code (`unauthorized`, `too_large`, ...), or `offline`. */
  readonly code: string;
  /** Whether the same request may succeed later. */
  readonly retryable: boolean;

  constructor(message: string, details: { status: number; code: string; retryable: boolean; cause?: unknown }) {
    super(message, { cause: details.cause });
    this.status = details.status;
    this.code = details.code;
    this.retryable = details.retryable;
  }
}

nameErrors({ SyncError });

/** The fetch function the transport uses (injectable for tests and custom agents). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Talks to one sync server as one user. */
export class SyncTransport {
  readonly #base: string;
  readonly #token: string;
  readonly #fetch: FetchLike;
  readonly #timeoutMs: number;
  readonly #app: string | undefined;

  /** @param options.app The app every request names (`?app=`), or none: the user's own space. */
  constructor(options: { url: string; token: string; app?: string; fetch?: FetchLike; timeoutMs?: number }) {
    this.#base = `${options.url.replace(/\/+$/, "")}${SYNC_PATH}`;
    this.#app = options.app;
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** The app every request names, or undefined: the user's own space. */
  get app(): string | undefined {
    return this.#app;
  }

  hello(): Promise<HelloResponse> {
    return this.#call("GET", "/hello");
  }

  push(request: PushRequest): Promise<PushResponse> {
    return this.#call("POST", "/push", request);
  }

  /**
   * A page of changes after `since`. With `wait`, a long poll: a server that
   * has nothing new holds the request up to `wait.seconds` for another
   * device's push (the per-request timeout counts from the end of that
   * wait), and `wait.signal` ends it early.
   */
  pull(
    since: number,
    limit: number,
    device?: string,
    wait?: { seconds: number; signal: AbortSignal },
  ): Promise<PullResponse> {
    const own = device === undefined ? "" : `&device=${encodeURIComponent(device)}`;
    const held = wait === undefined ? "" : `&wait=${wait.seconds}`;
    // removed=1: this client applies removals (older ones would refuse the change kind).
    return this.#call(
      "GET",
      `/pull?since=${since}&limit=${limit}${own}${held}&removed=1`,
      undefined,
      parsePullResponse,
      wait,
    );
  }

  /**
   * The user's threads on the server, a page of `pageSize` at a time, each
   * page asked for after the last one's `next` (a server that predates
   * pages answers the first with the whole list and no `next`). Throws
   * {@link SyncError} `bad_response` when a page names a `next` it named
   * before: a server that would keep this loop going.
   */
  async *threads(pageSize = MAX_THREADS_PAGE): AsyncGenerator<WireThread> {
    const seen = new Set<string>();
    let after: string | undefined;
    do {
      const from = after === undefined ? "" : `&after=${encodeURIComponent(after)}`;
      const page = await this.#call("GET", `/threads?limit=${pageSize}${from}`, undefined, parseThreadsResponse);
      yield* page.threads;
      after = page.next;
      if (after !== undefined && seen.has(after))
        throw new SyncError(`Sync server's answer to GET /threads names the page after "${after}" again.`, {
          status: 200,
          code: "bad_response",
          retryable: false,
        });
      if (after !== undefined) seen.add(after);
    } while (after !== undefined);
  }

  putKey(keyRecord: Uint8Array): Promise<KeyResponse> {
    return this.#call("PUT", "/key", { v: SYNC_PROTOCOL_VERSION, keyRecord });
  }

  async #call<R>(
    method: string,
    path: string,
    body?: unknown,
    parse?: (value: unknown) => R,
    wait?: { seconds: number; signal: AbortSignal },
  ): Promise<R> {
    const controller = new AbortController();
    const limitMs = this.#timeoutMs + (wait?.seconds ?? 0) * 1000;
    const timer = setTimeout(() => controller.abort(new Error(`no answer within ${limitMs} ms`)), limitMs);
    const cancel = () => controller.abort(wait?.signal.reason);
    if (wait?.signal.aborted) cancel();
    wait?.signal.addEventListener("abort", cancel, { once: true });
    let response: Response;
    let bytes: Uint8Array;
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, accept: SYNC_MEDIA_TYPE };
      const init: RequestInit = { method, headers, signal: controller.signal };
      if (body !== undefined) {
        headers["content-type"] = SYNC_MEDIA_TYPE;
        init.body = encodeBody(body) as Uint8Array<ArrayBuffer>;
      }
      const app =
        this.#app === undefined ? "" : `${path.includes("?") ? "&" : "?"}app=${encodeURIComponent(this.#app)}`;
      response = await this.#fetch(`${this.#base}${path}${app}`, init);
      // The whole body, or no answer at all: a cut connection lands here too.
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      throw new SyncError(
        `Sync server unreachable (${method} ${path}): ${(error as Error)?.message ?? String(error)}`,
        {
          status: 0,
          code: "offline",
          retryable: true,
          cause: error,
        },
      );
    } finally {
      clearTimeout(timer);
      wait?.signal.removeEventListener("abort", cancel);
    }
    if (!response.ok) {
      let code = "http_error";
      let message = `HTTP ${response.status}`;
      try {
        const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { error?: { code?: string; message?: string } };
        code = parsed.error?.code ?? code;
        message = parsed.error?.message ?? message;
      } catch {
        // Not our JSON error body (a proxy's page): keep the status.
      }
      throw new SyncError(`Sync server refused ${method} ${path}: ${message}`, {
        status: response.status,
        code,
        // 408: the request did not reach the server whole in time (a slow link), nothing of it applied.
        retryable: response.status >= 500 || response.status === 429 || response.status === 408,
      });
    }
    const type = response.headers.get("content-type") ?? "";
    if (!type.startsWith(SYNC_MEDIA_TYPE)) {
      throw new SyncError(
        `Sync server answered ${method} ${path} with "${type}", not ${SYNC_MEDIA_TYPE}: is the URL right?`,
        {
          status: response.status,
          code: "bad_response",
          retryable: false,
        },
      );
    }
    try {
      const value = decodeBody(bytes);
      return parse ? parse(value) : (value as R);
    } catch (error) {
      // Bytes that end early are an answer the network cut, not a bad one: Chromium's fetch takes a
      // connection closed mid-headers (after the content type, before the length) as a whole 200 with
      // an empty or partial body. Retryable, as any cut connection (convergence seed 5117).
      if (bytes.length === 0 || ((error as Error).cause as { incomplete?: unknown } | undefined)?.incomplete === true)
        throw new SyncError(`Sync server's answer to ${method} ${path} was cut short (${bytes.length} bytes)`, {
          status: 0,
          code: "offline",
          retryable: true,
          cause: error,
        });
      // A hostile server or a man-in-the-middle: nothing of the answer is used.
      throw new SyncError(
        `Sync server's answer to ${method} ${path} breaks the protocol: ${(error as Error).message}`,
        {
          status: response.status,
          code: "bad_response",
          retryable: false,
          cause: error,
        },
      );
    }
  }
}
