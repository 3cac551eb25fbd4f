/**
 * Strikes per remote address: a bounded map of fixed windows, on a clock
 * the test moves.
 */
import { describe, expect, it } from "vitest";
import { Strikes, strikeKey, strikeSite } from "./gate.js";

describe("Strikes", () => {
  it("refuses a key past its strikes until its window ends, and gives back a strike once", () => {
    let now = 1_000;
    const strikes = new Strikes(2, 60_000, 100, () => now);
    const first = strikes.take("a")!;
    expect(strikes.take("a")).toBeTypeOf("function");
    expect(strikes.take("a")).toBeUndefined();
    expect(strikes.retryAfterMs("a")).toBe(60_000);
    first();
    first(); // twice gives back one
    expect(strikes.take("a")).toBeTypeOf("function");
    expect(strikes.take("a")).toBeUndefined();
    now += 59_999;
    expect(strikes.retryAfterMs("a")).toBe(1);
    now += 1;
    expect(strikes.take("a")).toBeTypeOf("function");
  });

  it("remembers at most `capacity` keys, forgetting the oldest windows first", () => {
    let now = 0;
    const strikes = new Strikes(1, 60_000, 3, () => now);
    for (const key of ["a", "b", "c"]) {
      strikes.take(key);
      now += 1;
    }
    expect(strikes.take("a")).toBeUndefined();
    for (let i = 0; i < 1_000; i++) strikes.take(`flood-${i}`);
    expect(strikes.size).toBe(3);
    // "a" was forgotten (a fresh window), the latest flood keys are held.
    expect(strikes.take("a")).toBeTypeOf("function");
    expect(strikes.take("flood-999")).toBeUndefined();
  });

  it("forgets a key whose strikes were all given back", () => {
    const strikes = new Strikes(1, 60_000, 3);
    strikes.take("good")!();
    expect(strikes.size).toBe(0);
  });
});

describe("strikeKey", () => {
  it("keeps an IPv4 address, and counts an IPv6 address by its /64 (what one host can take at will)", () => {
    expect(strikeKey("203.0.113.7")).toBe("203.0.113.7");
    expect(strikeKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(strikeKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(strikeKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(strikeKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(strikeKey("::1")).toBe("0:0:0:0::/64");
    expect(strikeKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(strikeKey(undefined)).toBe("");
  });

  it("strikeSite: an IPv6 address's /48, none for IPv4", () => {
    expect(strikeSite("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1::/48");
    expect(strikeSite("2001:0db8:0001:ffff::1")).toBe("2001:db8:1::/48");
    expect(strikeSite("2001:db8::1")).toBe("2001:db8:0::/48");
    expect(strikeSite("fe80::1%eth0")).toBe("fe80:0:0::/48");
    expect(strikeSite("203.0.113.7")).toBeUndefined();
    expect(strikeSite("::ffff:203.0.113.7")).toBeUndefined();
    expect(strikeSite(undefined)).toBeUndefined();
  });
});
