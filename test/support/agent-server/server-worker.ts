/**
 * A dedicated worker for `src/agent-server/worker.browser.test.ts`: a local
 * agent server on the database its first message names, exposed to the page
 * on the worker's own endpoint. Requests that arrive before the server is
 * open wait for it.
 */
import { IndexedDBSaver } from "../../../src/saver/index.js";
import {
  createLocalAgentServer,
  exposeLocalAgentServer,
  type LocalAgentServer,
  type MessageEndpoint,
} from "../../../src/agent-server/index.js";
import { agentGraph } from "./graph.js";

const scope = self as unknown as MessageEndpoint;
let opened: (server: LocalAgentServer) => void;
const server = new Promise<LocalAgentServer>((resolve) => (opened = resolve));
scope.addEventListener("message", (event: MessageEvent<{ dbName?: string }>) => {
  const dbName = event.data?.dbName;
  if (typeof dbName !== "string") return;
  void createLocalAgentServer({ graphs: { agent: agentGraph() }, saver: new IndexedDBSaver({ dbName }) }).then(opened);
});
exposeLocalAgentServer(server, scope);
