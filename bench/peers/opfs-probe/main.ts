/** The OPFS probe's page: runs worker.ts and leaves its lines on `window.__probe`. */
declare global {
  interface Window {
    __probe?: string;
  }
}

const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
worker.onmessage = ({ data }: MessageEvent<string>) => (window.__probe = data);
worker.onerror = (event) => (window.__probe = `error: ${event.message}`);
worker.postMessage("run");

export {};
