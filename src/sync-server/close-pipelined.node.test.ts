/**
 * Requests pipelined on one kept-alive connection while the sync server
 * closes: each is answered in order (its own answer when it came before the
 * close, the protocol's 503 `unavailable` when it came during it), and only
 * the last answer closes the connection. Before, the answer of the request
 * in flight closed it and every answer queued behind was dropped (one of a
 * push that committed, too): the client read an end of stream where it had
 * asked. The connection still ends once its last answer is out, so the close
 * need not cut it at its bound. A raw socket, since
 * node:http's Agent never pipelines. Real server on loopback, real PostgreSQL.
 */
import { connect, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { authenticate, newUser, postgresUrl } from "../../test/support/sync/harness.js";
import { countCuts } from "../../test/support/sync/close-cuts.js";
import { SYNC_PATH } from "../sync/protocol.js";
import { createSyncServer } from "./server.js";

/** One answer as read off the wire: status line, headers (lower-case names), body. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A GET of /hello as bytes, for `token`. */
const hello = (token: string) => `GET ${SYNC_PATH}/hello HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`;

/** Every byte the server sends on `socket` until it closes it, and whether it ended cleanly (no reset). */
function readAll(socket: Socket): Promise<{ bytes: Buffer; error?: string }> {
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve) => {
    socket.once("error", (error: NodeJS.ErrnoException) =>
      resolve({ bytes: Buffer.concat(chunks), error: error.code }),
    );
    socket.once("close", () => resolve({ bytes: Buffer.concat(chunks) }));
  });
}

/** The answers in `bytes` (each with a content-length, as the server sends them). */
function parseAnswers(bytes: Buffer): Answer[] {
  const answers: Answer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end < 0) throw new Error(`A partial head: ${bytes.subarray(at).toString("latin1")}`);
    const [statusLine, ...lines] = bytes.subarray(at, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"]);
    answers.push({
      status: Number(statusLine!.split(" ")[1]),
      headers,
      body: bytes.subarray(end + 4, end + 4 + length).toString("latin1"),
    });
    at = end + 4 + length;
  }
  return answers;
}

/** A promise, and the function that resolves it. */
function signal(): [Promise<void>, () => void] {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return [promise, fire];
}

describe("sync server: closing with pipelined requests", () => {
  it.each([
    ["sent before close() began, answered in full", false],
    ["sent during close(), answered 503 unavailable", true],
  ])(
    "a request pipelined behind one in flight is %s, and the connection closes after it",
    async (_, late) => {
      const { token } = newUser("pipelined");
      const { token: slowToken } = newUser("pipelined-slow");
      const [held, letGo] = signal();
      const [inAuthenticate, entered] = signal();
      const [secondSeen, second] = signal();
      // The first request waits in `authenticate` until let go, so the second is queued behind it.
      const server = await createSyncServer({
        connectionString: await postgresUrl(),
        authenticate: async (t) => {
          if (t !== slowToken) second();
          else {
            entered();
            await held;
          }
          return authenticate(t);
        },
      });
      // The connections the close had to cut at its bound: none, when each ends after its last answer.
      const cuts = countCuts(server.app.server);
      let socket: Socket | undefined;
      try {
        const { port } = new URL(await server.listen({ port: 0 }));
        socket = connect(Number(port), "127.0.0.1");
        const read = readAll(socket);
        socket.write(hello(slowToken));
        if (!late) socket.write(hello(token));
        await inAuthenticate;
        if (!late) await secondSeen; // its answer follows the first's on the wire, so it waits
        const closed = server.close();
        if (late) {
          // Node hands the second to Fastify (whose onRequest hooks start at once) while the first is in flight.
          const parsed = new Promise((resolve) => server.app.server.once("request", resolve));
          socket.write(hello(token));
          await parsed;
        }
        letGo();
        const { bytes, error } = await read;
        expect(error).toBeUndefined();
        const answers = parseAnswers(bytes);
        expect(answers.map((answer) => answer.status)).toEqual([200, late ? 503 : 200]);
        // Said on the first, it would drop the second. The second says it when its head came during the close.
        expect(answers[0]!.headers.connection).not.toBe("close");
        if (late) {
          expect(answers[1]!.headers.connection).toBe("close");
          expect(answers[1]!.headers["retry-after"]).toBe("1");
          expect(JSON.parse(answers[1]!.body)).toEqual({ error: { code: "unavailable", message: expect.any(String) } });
        }
        await closed;
        expect(cuts.count).toBe(0);
      } finally {
        letGo();
        socket?.destroy();
        await server.close();
      }
    },
    30_000,
  );
});
