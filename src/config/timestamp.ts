/** The compact local timestamp in flower's file names (run ids, files set aside): `YYYYmmdd-HHMMSS`. */

function twoDigits(value: number): string {
  return String(value).padStart(2, '0');
}

/** `YYYYmmdd-HHMMSS` in local time; sorts chronologically as text. */
export function compactTimestamp(at: Date = new Date()): string {
  const date = `${at.getFullYear()}${twoDigits(at.getMonth() + 1)}${twoDigits(at.getDate())}`;
  const time = `${twoDigits(at.getHours())}${twoDigits(at.getMinutes())}${twoDigits(at.getSeconds())}`;
  return `${date}-${time}`;
}
