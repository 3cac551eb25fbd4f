/** Path of the Chromium binary (CHROMIUM_PATH, else Debian's /usr/bin/chromium). */
export declare const chromiumPath: string;
/** Flags that keep headless Chromium quiet on a machine with no network. */
export declare const chromiumArgs: string[];
