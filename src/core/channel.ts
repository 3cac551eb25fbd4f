/**
 * BroadcastChannels as the package opens them (the saver's change feed, the
 * store's key-change announcements): none where the environment has none,
 * and never keeping a Node process alive.
 */

/**
 * A BroadcastChannel named `name` that hands each message's data to
 * `onMessage`, or `undefined` where BroadcastChannel does not exist.
 */
export function openChannel(name: string, onMessage: (data: unknown) => void): BroadcastChannel | undefined {
  if (typeof BroadcastChannel === "undefined") return undefined;
  const channel = new BroadcastChannel(name);
  // Node keeps the process alive while a channel is open.
  (channel as unknown as { unref?: () => void }).unref?.();
  channel.onmessage = (event: MessageEvent<unknown>) => onMessage(event.data);
  return channel;
}
