/** The demo's folder (its Vite config and its page). */
export declare const demoRoot: string;
/** Builds the demo and the e2e entries into `outDir`, unless a finished build is there already. */
export declare function buildDemoOnce(outDir: string): Promise<void>;
