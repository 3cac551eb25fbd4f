/**
 * A shared worker for `src/agent-server/shared-worker.browser.test.ts`: one
 * local agent server for every page that connects, on the database the first
 * connection's first message names, exposed on each connection's port.
 * Requests that arrive before the server is open wait for it.
 */
import { IndexedDBSaver } from "../../../src/saver/index.js";
import {
  createLocalAgentServer,
  exposeLocalAgentServer,
  type LocalAgentServer,
} from "../../../src/agent-server/index.js";
import { agentGraph } from "./graph.js";

let opened: (server: LocalAgentServer) => void;
const server = new Promise<LocalAgentServer>((resolve) => (opened = resolve));
let opening = false;

(self as unknown as { onconnect: (event: MessageEvent) => void }).onconnect = (event) => {
  const port = event.ports[0]!;
  port.addEventListener("message", (message: MessageEvent<{ dbName?: string }>) => {
    const dbName = message.data?.dbName;
    if (typeof dbName !== "string" || opening) return;
    opening = true;
    void createLocalAgentServer({ graphs: { agent: agentGraph() }, saver: new IndexedDBSaver({ dbName }) }).then(
      opened,
    );
  });
  exposeLocalAgentServer(server, port);
};
