/**
 * interrupt/: human in the loop without AsyncLocalStorage. `interruptWith`
 * mirrors LangGraph's `interrupt()` with the task's config passed explicitly.
 * It imports core/ and LangGraph (a peer) only.
 */
export { interruptWith, UnsupportedLangGraphError, SUPPORTED_LANGGRAPH } from "./interrupt.js";
