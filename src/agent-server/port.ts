/**
 * The worker mode: a local agent server in a dedicated or shared worker, and
 * the page talking to it through a `fetch` of its own over a message port,
 * so that graph runs and IndexedDB work leave the page's main thread free.
 * A request crosses as its method, URL, headers and body bytes; the answer
 * comes back as its status and headers, then its body chunk by chunk (the
 * chunks' buffers transferred, not copied), so a run's server-sent events
 * stream as they come. Cancelling the response body (or aborting the
 * request's signal) cancels the worker's side. There is no backpressure:
 * a body is sent as fast as the server produces it, which a run's event
 * stream never outpaces.
 */

/** A message port, a `Worker` or a worker's global scope: anything that posts and receives messages. */
export interface MessageEndpoint {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  removeEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  /** A `MessagePort` delivers nothing until started. */
  start?(): void;
}

import { defaultLockManager } from "../runs/locks.js";

/** Version of the messages below: a page and a worker of different builds refuse each other's. */
const PROTOCOL = "langgraph-checkpoint-indexeddb:agent-server-port:v1";

/**
 * The request header naming the page that sent a request: the page holds the
 * Web Lock {@link clientLock} of that name while it lives, so the worker
 * learns that it is gone (a tab closed: a port says nothing) when it gets
 * the lock, and cancels what the page asked and still goes on, as a server
 * sees a closed connection.
 */
const CLIENT_HEADER = "x-langgraph-local-agent-client";
const clientLock = (clientId: string) => `${PROTOCOL}:client:${clientId}`;

type ToServer =
  | {
      p: typeof PROTOCOL;
      t: "request";
      id: number;
      method: string;
      url: string;
      headers: [string, string][];
      body: ArrayBuffer | null;
    }
  | { p: typeof PROTOCOL; t: "cancel"; id: number };

type ToPage =
  | { p: typeof PROTOCOL; t: "head"; id: number; status: number; statusText: string; headers: [string, string][] }
  | { p: typeof PROTOCOL; t: "chunk"; id: number; chunk: Uint8Array }
  | { p: typeof PROTOCOL; t: "end"; id: number }
  | { p: typeof PROTOCOL; t: "fail"; id: number; message: string };

/** What {@link exposeLocalAgentServer} answers with: a local agent server, or anything with its `fetch`. */
interface AnswersRequests {
  fetch(input: Request): Promise<Response>;
}

function isOurs<T extends { p: string }>(data: unknown): data is T {
  return typeof data === "object" && data !== null && (data as { p?: unknown }).p === PROTOCOL;
}

/**
 * Answers the requests that {@link connectLocalAgentServer} sends on
 * `endpoint` with `server.fetch`: call it in the worker that runs the
 * server (`self` in a dedicated worker, each `connect` event's port in a
 * shared worker).
 *
 * Give it the server's promise, before the worker awaits anything: a worker
 * drops the messages that come before it listens, so one that awaited
 * `createLocalAgentServer` first lost the page's first requests, which then
 * never answered. Requests that come while the server opens wait for it; if
 * it fails to open, each fails with its error.
 *
 * @returns A function that stops answering (requests under way are cancelled).
 * @example
 * ```ts
 * // in the worker: no await before this line
 * exposeLocalAgentServer(createLocalAgentServer({ graphs: { agent: graph }, saver, store }), self);
 * ```
 */
export function exposeLocalAgentServer(
  server: AnswersRequests | Promise<AnswersRequests>,
  endpoint: MessageEndpoint,
): () => void {
  // A server that fails to open answers each request with its error; with no request yet, that is no
  // unhandled rejection of the worker.
  if (server instanceof Promise) server.catch(() => undefined);
  const readers = new Map<number, ReadableStreamDefaultReader<Uint8Array>>();
  // Each request's signal, aborted when the page cancels it: the server sees the client leave
  // (a run asked with on_disconnect "cancel" stops), as it does for a request in the page.
  const controllers = new Map<number, AbortController>();
  const cancelled = new Set<number>();
  /** The page each request under way came from (its CLIENT_HEADER), and the pages watched. */
  const senders = new Map<number, string>();
  const watched = new Set<string>();
  const locks = defaultLockManager();
  const send = (message: ToPage, transfer: Transferable[] = []) => endpoint.postMessage(message, transfer);
  const cancel = (id: number, reason: string) => {
    const controller = controllers.get(id);
    // A cancel that crosses the request's end is for nothing: nothing to remember.
    if (!controller) return;
    cancelled.add(id);
    controller.abort(new Error(reason));
    void readers
      .get(id)
      ?.cancel()
      .catch(() => undefined);
  };
  /**
   * Once the page `clientId` is gone (its lock free), cancels its requests
   * still under way. Only a lock seen held is watched: without Web Locks the
   * page's lock lives in its own realm's stand-in, and this one's would be
   * granted at once, as if every page were gone.
   */
  const watch = (clientId: string) => {
    if (watched.has(clientId)) return;
    watched.add(clientId);
    const name = clientLock(clientId);
    const gone = async () => {
      for (const [id, sender] of senders) if (sender === clientId) cancel(id, "The page that sent it is gone.");
    };
    void locks
      .query()
      .then(({ held }) => (held.includes(name) ? locks.request(name, {}, gone) : undefined))
      .catch(() => undefined);
  };
  const answer = async (request: Extract<ToServer, { t: "request" }>) => {
    const { id } = request;
    const controller = new AbortController();
    controllers.set(id, controller);
    const sender = request.headers.find(([name]) => name.toLowerCase() === CLIENT_HEADER)?.[1];
    if (sender) {
      senders.set(id, sender);
      watch(sender);
    }
    try {
      const response = await (
        await server
      ).fetch(
        new Request(request.url, {
          method: request.method,
          headers: request.headers,
          body: request.body,
          signal: controller.signal,
        }),
      );
      send({
        p: PROTOCOL,
        t: "head",
        id,
        status: response.status,
        statusText: response.statusText,
        headers: [...response.headers],
      });
      if (!response.body) return send({ p: PROTOCOL, t: "end", id });
      const reader = response.body.getReader();
      readers.set(id, reader);
      if (cancelled.has(id)) await reader.cancel();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        send({ p: PROTOCOL, t: "chunk", id, chunk: value }, [value.buffer]);
      }
      send({ p: PROTOCOL, t: "end", id });
    } catch (error) {
      send({ p: PROTOCOL, t: "fail", id, message: error instanceof Error ? error.message : String(error) });
    } finally {
      readers.delete(id);
      controllers.delete(id);
      cancelled.delete(id);
      senders.delete(id);
    }
  };
  const onMessage = (event: MessageEvent) => {
    const message: unknown = event.data;
    if (!isOurs<ToServer>(message)) return;
    if (message.t === "request") void answer(message);
    else cancel(message.id, "The page cancelled the request.");
  };
  endpoint.addEventListener("message", onMessage);
  endpoint.start?.();
  return () => {
    endpoint.removeEventListener("message", onMessage);
    for (const controller of controllers.values()) controller.abort(new Error("The server stopped answering."));
    for (const reader of readers.values()) void reader.cancel().catch(() => undefined);
  };
}

/**
 * `headers` naming this page (`clientId`) in {@link CLIENT_HEADER}, in place
 * of any value of that name the request came with: appended after it, the
 * worker read the request's own value, watched the page it named (or none),
 * and did not see this page go.
 */
function withClient(headers: Headers, clientId: string): Headers {
  const named = new Headers(headers);
  named.set(CLIENT_HEADER, clientId);
  return named;
}

/** A local agent server in a worker, as the page sees it. */
export interface RemoteAgentServer {
  /** Sends an Agent Server request to the worker: give it to the SDK's `Client` as `callerOptions.fetch`. */
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Stops listening on the endpoint; requests under way fail. */
  close(): void;
}

interface Pending {
  head(response: Response): void;
  fail(error: Error): void;
  body: ReadableStreamDefaultController<Uint8Array> | undefined;
}

/**
 * The page's side of the worker mode: a `fetch` that sends each request to
 * the server a worker exposes on `endpoint` with {@link exposeLocalAgentServer}
 * (a `Worker`, a `SharedWorker`'s `port`, or a `MessagePort`).
 *
 * @example
 * ```ts
 * const worker = new Worker(workerUrl, { type: "module" }); // a module that calls exposeLocalAgentServer
 * const server = connectLocalAgentServer(worker);
 * const client = new Client({ apiUrl: "http://local.invalid", callerOptions: { fetch: server.fetch } });
 * ```
 */
export function connectLocalAgentServer(endpoint: MessageEndpoint): RemoteAgentServer {
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let closed = false;
  /** Why no request can be answered any more (the worker's script did not load), once known. */
  let failed: Error | undefined;
  // This page's lock, held while it lives (or until close): the worker watches it (CLIENT_HEADER).
  const clientId = crypto.randomUUID();
  let leave = (): void => undefined;
  const held = new Promise<void>((resolve) => {
    void defaultLockManager()
      .request(clientLock(clientId), {}, () => {
        resolve();
        // Closed before the lock came: let it go at once.
        return closed ? Promise.resolve() : new Promise<void>((release) => (leave = release));
      })
      .catch(() => resolve());
  });
  const onMessage = (event: MessageEvent) => {
    const message: unknown = event.data;
    if (!isOurs<ToPage>(message)) return;
    const entry = pending.get(message.id);
    if (!entry) return;
    if (message.t === "head") {
      const stream = new ReadableStream<Uint8Array>({
        start: (controller) => void (entry.body = controller),
        cancel: () => {
          pending.delete(message.id);
          endpoint.postMessage({ p: PROTOCOL, t: "cancel", id: message.id } satisfies ToServer);
        },
      });
      const nullBody = message.status === 204 || message.status === 304;
      entry.head(new Response(nullBody ? null : stream, message));
    } else if (message.t === "chunk") entry.body?.enqueue(message.chunk);
    else {
      pending.delete(message.id);
      const error =
        message.t === "fail" ? new Error(`The agent server in the worker failed: ${message.message}`) : undefined;
      if (error) {
        entry.fail(error);
        entry.body?.error(error);
      } else entry.body?.close();
    }
  };
  /**
   * A `Worker` whose script failed to fetch or parse fires a plain `error`
   * Event (an exception thrown in a running worker is an `ErrorEvent`, and
   * the worker goes on): nothing will answer, so every request fails rather
   * than waits for ever. A `SharedWorker` fires it on itself, not its port.
   */
  const onError = (event: Event) => {
    if (typeof ErrorEvent !== "undefined" && event instanceof ErrorEvent) return;
    failed = new Error("connectLocalAgentServer: the agent server's worker failed to load its script.");
    for (const entry of pending.values()) {
      entry.fail(failed);
      entry.body?.error(failed);
    }
    pending.clear();
  };
  const errors = endpoint as Partial<Pick<EventTarget, "addEventListener" | "removeEventListener">>;
  endpoint.addEventListener("message", onMessage);
  errors.addEventListener?.("error", onError);
  endpoint.start?.();
  return {
    fetch: async (input, init) => {
      if (closed) throw new Error("connectLocalAgentServer: closed.");
      if (failed) throw failed;
      const request = new Request(input, init);
      // Not `request.body`: Firefox has no Request.body, and it reads null there whatever was sent.
      const body = request.method === "GET" || request.method === "HEAD" ? null : await request.arrayBuffer();
      // The worker must find the lock held when it asks for it, or it would take this page for gone.
      await held;
      const id = nextId++;
      return new Promise<Response>((resolve, reject) => {
        // The worker may have failed while the body was read.
        if (failed) return reject(failed);
        const entry: Pending = { head: resolve, fail: reject, body: undefined };
        pending.set(id, entry);
        const abort = () => {
          entry.fail(request.signal.reason as Error);
          entry.body?.error(request.signal.reason);
          if (pending.delete(id)) endpoint.postMessage({ p: PROTOCOL, t: "cancel", id } satisfies ToServer);
        };
        if (request.signal.aborted) return abort();
        request.signal.addEventListener("abort", abort, { once: true });
        const message: ToServer = {
          p: PROTOCOL,
          t: "request",
          id,
          method: request.method,
          url: request.url,
          headers: [...withClient(request.headers, clientId)],
          body,
        };
        endpoint.postMessage(message, body ? [body] : []);
      });
    },
    close: () => {
      closed = true;
      endpoint.removeEventListener("message", onMessage);
      errors.removeEventListener?.("error", onError);
      // The worker cancels what this connection asked and still goes on, as for a page gone.
      leave();
      const error = new Error("connectLocalAgentServer: closed.");
      for (const entry of pending.values()) {
        entry.fail(error);
        entry.body?.error(error);
      }
      pending.clear();
    },
  };
}
