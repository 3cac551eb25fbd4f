/**
 * Draws the demo's app icons (demo/public/icons/*.png, committed) from one
 * SVG, rendered by Debian's Chromium through Playwright: the 192 and 512 px
 * icons (a rounded tile, transparent corners) and a maskable one (the tile's
 * colour to every edge, the glyph inside the central 80 % safe zone, since a
 * launcher may crop it to any shape). Run again after changing the drawing:
 * `node scripts/demo-icons.mjs`.
 */
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright";
import { chromiumArgs, chromiumPath } from "../test/support/chromium.mjs";

const out = fileURLToPath(new URL("../demo/public/icons/", import.meta.url));
/** The light theme's accent (demo/src/style.css `--accent`), and the manifest's theme colour. */
const ACCENT = "#1f6feb";
/** A speech bubble with three dots, on a 100-unit square. */
const GLYPH = `
  <path fill="#fff" d="M22 24h56a8 8 0 0 1 8 8v30a8 8 0 0 1-8 8H46L30 83V70h-8a8 8 0 0 1-8-8V32a8 8 0 0 1 8-8z"/>
  <circle cx="35" cy="47" r="5" fill="${ACCENT}"/><circle cx="50" cy="47" r="5" fill="${ACCENT}"/>
  <circle cx="65" cy="47" r="5" fill="${ACCENT}"/>`;

/** The SVG of an icon `size` px wide; `maskable`: full-bleed tile, glyph shrunk into the safe zone. */
function svg(size, maskable) {
  const tile = maskable
    ? `<rect width="100" height="100" fill="${ACCENT}"/><g transform="translate(15 15) scale(0.7)">${GLYPH}</g>`
    : `<rect width="100" height="100" rx="22" fill="${ACCENT}"/>${GLYPH}`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}" viewBox="0 0 100 100">${tile}</svg>`;
}

const ICONS = [
  { name: "icon-192.png", size: 192, maskable: false },
  { name: "icon-512.png", size: 512, maskable: false },
  { name: "maskable-512.png", size: 512, maskable: true },
];

mkdirSync(out, { recursive: true });
const browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
try {
  const page = await browser.newPage({ viewport: { width: 512, height: 512 }, deviceScaleFactor: 1 });
  for (const { name, size, maskable } of ICONS) {
    await page.setContent(`<body style="margin:0;background:transparent">${svg(size, maskable)}</body>`);
    await page.locator("svg").screenshot({ path: `${out}${name}`, omitBackground: true });
    console.log(`${out}${name}`);
  }
} finally {
  await browser.close();
}
