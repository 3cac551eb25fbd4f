/**
 * Whether a one-line hint fits its field: the composer's and the approval
 * card's reason field show a shorter hint where the full one would be cut off.
 */

let ruler: CanvasRenderingContext2D | null | undefined;

/**
 * Whether `text` fits on one line of `box`, measured on a canvas in the box's
 * own font (not from the box's scrollHeight, which counts the placeholder in
 * Chromium but is no standard for it, and says nothing for an input). A box
 * not laid out yet counts as wide: its first resize decides again.
 */
export function fitsOneLine(box: HTMLInputElement | HTMLTextAreaElement, text: string): boolean {
  if (box.clientWidth === 0) return true;
  const style = getComputedStyle(box);
  const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  ruler ??= document.createElement("canvas").getContext("2d");
  if (!ruler) return true;
  ruler.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  return ruler.measureText(text).width <= room;
}

/** `full` as `box`'s placeholder where it fits, else `short`. */
export function fitPlaceholder(box: HTMLInputElement | HTMLTextAreaElement, full: string, short: string): void {
  box.placeholder = fitsOneLine(box, full) ? full : short;
}
