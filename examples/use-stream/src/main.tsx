/**
 * The example's entry: the React app on the page's root element. App.tsx
 * imports ./server.ts, whose top-level await opens the Agent Server (and its
 * IndexedDB databases) before the first render.
 */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.js";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
