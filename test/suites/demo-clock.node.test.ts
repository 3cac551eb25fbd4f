/**
 * The demo's one way of writing a moment (demo/src/clock.ts): the locale's own short time, the date before it
 * when not today, the year in a list when not this year.
 */
import { expect, it } from "vitest";
import { clockFor } from "../../demo/src/clock.js";

const now = new Date(2026, 11, 6, 12, 0).getTime();
const justAfterMidnight = new Date(2026, 11, 6, 0, 1);

it("writes today's moments as the locale writes a short time (00:01 in en-GB, not 0:01)", () => {
  expect(clockFor("en-GB").momentText(justAfterMidnight, now)).toBe("00:01");
  expect(clockFor("de-DE").momentText(justAfterMidnight, now)).toBe("00:01");
  expect(clockFor("en-US").momentText(justAfterMidnight, now)).toMatch(/^12:01\s?AM$/);
  expect(clockFor("en-GB").dayText(justAfterMidnight, now)).toBe("00:01");
});

it("puts the date before the time of another day, and the year in a list's day of another year", () => {
  const yesterday = new Date(2026, 11, 5, 9, 5);
  const lastYear = new Date(2025, 2, 3, 9, 5);
  expect(clockFor("en-GB").momentText(yesterday, now)).toBe("5 Dec 2026, 09:05");
  expect(clockFor("en-GB").dayText(yesterday, now)).toBe("5 Dec");
  expect(clockFor("en-GB").dayText(lastYear, now)).toBe("3 Mar 2025");
});
