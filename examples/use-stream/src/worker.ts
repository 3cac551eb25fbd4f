/**
 * The example's server in a worker (`?server=worker` or `?server=shared`):
 * the same server, exposed to the page with `exposeLocalAgentServer`, on
 * `self` in a dedicated worker, on each connection's port in a shared one
 * (one server for every tab). The worker's name carries the answer's pace.
 */
import { exposeLocalAgentServer } from "langgraph-checkpoint-indexeddb/agent-server";
import { openServer } from "./agent.js";

// Exposed at once, as a promise: requests that come before the server is open wait for it.
const answering = openServer(Number(/pace=(\d+)/.exec(self.name)?.[1] ?? 20));

if ("onconnect" in self) {
  (self as unknown as { onconnect: (event: MessageEvent) => void }).onconnect = (event) =>
    void exposeLocalAgentServer(answering, event.ports[0]!);
} else {
  exposeLocalAgentServer(answering, self as unknown as Parameters<typeof exposeLocalAgentServer>[1]);
}
