/** Path of Debian's full Chromium (CHROMIUM_PATH, else /usr/bin/chromium): what the bench runs. */
export declare const fullChromiumPath: string;
/** Path of the Chromium the tests launch (CHROMIUM_PATH, else the headless shell where installed, else the full browser). */
export declare const chromiumPath: string;
/** Flags that keep headless Chromium quiet on a machine with no network. */
export declare const chromiumArgs: string[];
