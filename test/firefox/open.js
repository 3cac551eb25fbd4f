// Vite runs this file (as BROWSER) with the page to open as the last argument:
// it starts Debian's firefox-esr headless through puppeteer-core over WebDriver
// BiDi (no driver binary needed), opens the page, and stays alive until killed.
import puppeteer from "puppeteer-core";

const target = process.argv.at(-1) ?? "/";
const base = `http://127.0.0.1:${process.env.FIREFOX_TEST_PORT ?? "63390"}/`;
const url = /^https?:/.test(target) ? target : new URL(target, base).href;
const browser = await puppeteer.launch({
  browser: "firefox",
  executablePath: process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr",
  headless: true,
});
const page = await browser.newPage();
await page.goto(url);
const stop = async () => {
  await browser.close().catch(() => undefined);
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
setInterval(() => undefined, 1 << 30);
