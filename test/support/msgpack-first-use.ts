/**
 * msgpackr's extension registry before and after the serializer's first
 * use, for src/serde/msgpack/msgpack.test.ts. It means something only in a
 * realm where nothing has packed or unpacked yet: the test file's own fresh
 * process in Node (`node-isolated`), and in a browser a fresh frame
 * ({@link firstUseInFreshFrame}), since the Chromium project's files share
 * their page.
 */
import { unpack } from "msgpackr";
import { openIframeTab } from "./iframe-tab.js";
import { MsgpackSerializer } from "../../src/serde/msgpack/index.js";
import { EXT } from "../../src/serde/msgpack/wire.js";

/** What msgpackr read of an `undefined` extension: before the first use (an error's message), and after. */
export interface FirstUse {
  before: string;
  after: unknown;
}

/** Reads an `undefined` extension after a serializer's construction, then after its first pack. */
export async function firstUse(): Promise<FirstUse> {
  new MsgpackSerializer({ types: [class Unused {}] });
  const undefinedExtension = new Uint8Array([0xd4, EXT.UNDEFINED, 0x00]);
  let before: string;
  try {
    before = `read as ${String(unpack(undefinedExtension))}`;
  } catch (error) {
    before = (error as Error).message;
  }
  await new MsgpackSerializer().dumpsTyped(1);
  return { before, after: unpack(undefinedExtension) };
}

/** {@link firstUse} in a new same-origin frame: a realm of its own, with its own msgpackr. */
export async function firstUseInFreshFrame(): Promise<FirstUse> {
  const page = new URL("./msgpack-first-use-page.ts", import.meta.url).href;
  const tab = await openIframeTab<{ firstUse: typeof firstUse }>(page, "msgpackFirstUse");
  try {
    return await tab.api.firstUse();
  } finally {
    tab.frame.remove();
  }
}
