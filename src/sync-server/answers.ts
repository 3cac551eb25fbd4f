/**
 * Answers a client does not take. Node hands an answer to the socket and
 * keeps in memory whatever of it the client has not read, for as long as
 * the connection lives, and nothing bounded that: a signed-in client that
 * sent pulls and never read their answers held each page (up to 8 MiB, or
 * one checkpoint of up to 16 MiB) in the server for ever; 40 of them held
 * 280 MB, and one token within its rate limit could pin gigabytes. So an
 * answer not taken (handed to the kernel) within the request timeout of its
 * sending has its connection cut (a device gives up on a request long
 * before: 30 s), and while a user has several answers untaken its reads are
 * refused before they load anything.
 */
/// <reference types="node" />
import type { FastifyInstance, FastifyReply } from "fastify";
import { SyncHttpError } from "./errors.js";
import { InFlight } from "./gate.js";

/** Answers of one user sent and not yet taken, in one process, past which its reads are refused (429). */
export const MAX_ANSWERS_UNTAKEN = 8;

/** Refuses a read of `reply`'s user (429) while it has {@link MAX_ANSWERS_UNTAKEN} answers untaken. */
export type AdmitRead = (reply: FastifyReply) => void;

/**
 * Watches every answer of `app` from when it is sent: its connection is cut
 * when the client has not taken it within `timeoutMs`, and it counts
 * against its user until taken or cut. Returns the check a read runs
 * before its work (in its user's read turn, so reads waiting their turn
 * are checked when they come to run, not when they arrived).
 */
export function watchAnswers(app: FastifyInstance, timeoutMs: number): AdmitRead {
  // Counted without a bound here: an answer is already made when it is sent; the bound is checked before reads.
  const untaken = new InFlight(Number.POSITIVE_INFINITY);
  app.addHook("onSend", async (request, reply) => {
    const response = reply.raw;
    if (response.destroyed) return; // the client already went away: nothing will be held
    const cut = setTimeout(() => response.destroy(), timeoutMs);
    cut.unref(); // a process closing need not wait for it: closing ends every connection
    const leave = request.userId ? untaken.enter(request.userId) : undefined;
    // "close" comes once the answer is handed over whole, or once its connection is gone.
    response.once("close", () => {
      clearTimeout(cut);
      leave?.();
    });
  });
  return (reply) => {
    if (untaken.load(reply.request.userId) < MAX_ANSWERS_UNTAKEN) return;
    reply.header("retry-after", "1");
    throw new SyncHttpError(
      429,
      "rate_limited",
      `This server holds at most ${MAX_ANSWERS_UNTAKEN} answers of one user that its clients have not taken yet; ` +
        "read those, or try again in a second.",
    );
  };
}
