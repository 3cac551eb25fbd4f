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

  it("reads every spelling of one address as that address (a proxy's X-Forwarded-For need not be Node's)", () => {
    // Before, an IPv4-mapped address written in hex or in full was read as IPv6 `::`, so every IPv4
    // client a proxy wrote so shared one key, and one client's bad tokens refused the others' sign-ins.
    for (const spelling of [
      "::ffff:cb00:7107",
      "::FFFF:CB00:7107",
      "0:0:0:0:0:ffff:203.0.113.7",
      "::ffff:203.0.113.7%eth0",
    ]) {
      expect(strikeKey(spelling), spelling).toBe("203.0.113.7");
      expect(strikeSite(spelling), spelling).toBeUndefined();
    }
    expect(strikeKey("::ffff:cb00:7108")).toBe("203.0.113.8");
    expect(strikeKey("::")).toBe("0:0:0:0::/64");
    expect(strikeKey("2001:DB8:1:2::")).toBe("2001:db8:1:2::/64");
    expect(strikeKey("fe80::1%25eth0")).toBe("fe80:0:0:0::/64");
    // An address written with an embedded IPv4 tail is still 8 groups (64:ff9b::/96 is NAT64's).
    expect(strikeKey("64:ff9b:1:2::203.0.113.7")).toBe("64:ff9b:1:2::/64");
    expect(strikeSite("64:ff9b:1:2::203.0.113.7")).toBe("64:ff9b:1::/48");
  });

  it("keys what is not an address by itself, never folding it into a real address's count", () => {
    // Before, anything with a colon was read as groups of hex: "1:2:3:4:5:6:7:8:9" (nine groups) and
    // "g::1" counted as the /64s 1:2:3:4 and 0:0:0:0, shared with real hosts there.
    expect(strikeKey("1:2:3:4:5:6:7:8:9")).toBe("1:2:3:4:5:6:7:8:9");
    expect(strikeKey("g::1")).toBe("g::1");
    expect(strikeSite("g::1")).toBeUndefined();
    expect(strikeKey("unknown")).toBe("unknown");
  });
});
