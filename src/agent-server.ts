/**
 * `langgraph-checkpoint-indexeddb/agent-server`: the LangGraph Agent Server
 * API served from the page or a worker, for the LangGraph SDK's `Client` and
 * `useStream`, on the IndexedDB saver and store. Its dependencies (Hono,
 * LangGraph) are optional peers: apps that do not import it pay nothing.
 */
export {
  createLocalAgentServer,
  IndexedDBThreadStore,
  exposeLocalAgentServer,
  connectLocalAgentServer,
  type MessageEndpoint,
  type RemoteAgentServer,
  type LocalAgentServer,
  type LocalAgentServerOptions,
  type AgentServerSaver,
  type AgentThreadStore,
  type IndexedDBThreadStoreParams,
  type ThreadRecord,
  type ThreadStatus,
  type ThreadMetadata,
  type ThreadSearchOptions,
  type ServedGraph,
  type RunRecord,
  type RunStatus,
  type StreamMode,
} from "./agent-server/index.js";
