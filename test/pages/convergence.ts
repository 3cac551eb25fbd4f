/**
 * The Chromium device of the sync convergence run
 * (test/support/sync/convergence-chromium.ts drives it): the same device as
 * the run's Node devices (test/support/sync/convergence-device.ts), on the
 * page's real IndexedDB and fetch. `window.convergence.open(setup)` opens it;
 * the run then calls its operations with `page.evaluate`. Two functions the
 * run exposes on the context report to Node: before each pull (the run
 * checks the database) and as each request goes out and its answer comes
 * back (so the run can close the tab at a chosen point of a round).
 */
import { openDevice, type DeviceOps, type DeviceSetup } from "../support/sync/convergence-device.js";

/** What the run exposes to every page of the device's context. */
interface Exposed {
  convergenceBeforePull(): Promise<void>;
  convergenceEvent(event: string): Promise<void>;
}

const exposed = window as unknown as Exposed;
let ops: DeviceOps | undefined;

const convergence = {
  async open(setup: DeviceSetup): Promise<void> {
    ops = await openDevice(setup, indexedDB, async (input, init) => {
      const path = new URL(input).pathname;
      // Not awaited: the run only notes the events (a tab closed mid-round waits for one).
      void exposed.convergenceEvent(`${init.method} ${path}`);
      if (path === "/v1/pull") await exposed.convergenceBeforePull();
      const response = await fetch(input, init);
      void exposed.convergenceEvent(`${path} answered`);
      return response;
    });
  },
  /** The device's operations (after `open`). */
  get ops(): DeviceOps {
    if (!ops) throw new Error("convergence.open() has not run in this page");
    return ops;
  },
  /** Starts a round and returns at once (the run closes the tab while it runs); its end is reported as "end". */
  startRound(): void {
    void convergence.ops.syncNow().finally(() => exposed.convergenceEvent("end"));
  },
};
(window as unknown as { convergence: typeof convergence }).convergence = convergence;
document.title = "ready";
