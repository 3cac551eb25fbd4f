/**
 * How the app writes a moment, one way everywhere (a message's time, History's rows, the thread list):
 * the locale's short time (`timeStyle: "short"`: "14:02", "00:01" or "2:02 PM", as the locale writes
 * it), with the locale's date before it when it is not today. Messages wrote "07:24 AM" and History
 * "7:24:20 AM" before; `hour: "numeric"` wrote "0:01" for en-GB in Chromium where the locale writes
 * "00:01". The formatters are built once: each `toLocaleTimeString` call builds its own, which was a
 * quarter of History's time on a 300-turn thread.
 */

/** The two ways of writing a moment, for `locale` (the browser's when not given). */
export function clockFor(locale?: string) {
  const timeOfDay = new Intl.DateTimeFormat(locale, { timeStyle: "short" });
  // `timeStyle` mixes only with `dateStyle` (with the year: "Dec 6, 2026, 12:01 AM", "6 Dec 2026, 00:01").
  const dayAndTime = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" });
  const dayOnly = new Intl.DateTimeFormat(locale, { day: "numeric", month: "short" });
  const dayOnlyAnotherYear = new Intl.DateTimeFormat(locale, { day: "numeric", month: "short", year: "numeric" });
  const today = (date: Date, now: number) => date.toDateString() === new Date(now).toDateString();
  return {
    /** "14:02" (or "2:02 PM", as the locale writes it) for a moment of today, else "6 Dec 2026, 14:02". */
    momentText(date: Date, now = Date.now()): string {
      return (today(date, now) ? timeOfDay : dayAndTime).format(date);
    },
    /** "14:02" for a moment of today, else "3 Mar" ("3 Mar 2025" another year): the short form of a list. */
    dayText(date: Date, now = Date.now()): string {
      if (today(date, now)) return timeOfDay.format(date);
      return (date.getFullYear() === new Date(now).getFullYear() ? dayOnly : dayOnlyAnotherYear).format(date);
    },
  };
}

/** The app's clock, in the browser's locale. */
export const { momentText, dayText } = clockFor();
