/**
 * How the app writes a moment, one way everywhere (a message's time, History's rows, the thread list):
 * the locale's, by `Intl.DateTimeFormat`, hours and minutes; the day too when it is not today. Messages
 * wrote "07:24 AM" and History "7:24:20 AM" before. The formatters are built once: each
 * `toLocaleTimeString` call builds its own, which was a quarter of History's time on a 300-turn thread.
 */
const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: "numeric", minute: "2-digit" });
const dayAndTime = new Intl.DateTimeFormat(undefined, {
  day: "numeric",
  month: "short",
  hour: "numeric",
  minute: "2-digit",
});
const dayOnly = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short" });

function today(date: Date, now: number): boolean {
  return date.toDateString() === new Date(now).toDateString();
}

/** "14:02" (or "2:02 PM", as the locale writes it) for a moment of today, else "3 Mar, 14:02". */
export function momentText(date: Date, now = Date.now()): string {
  return (today(date, now) ? timeOfDay : dayAndTime).format(date);
}

/** "14:02" for a moment of today, else "3 Mar": the short form of a list. */
export function dayText(date: Date, now = Date.now()): string {
  return (today(date, now) ? timeOfDay : dayOnly).format(date);
}
