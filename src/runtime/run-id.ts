/**
 * Run ids and the compact local timestamp used in flower's file names.
 *
 * A run id marks every manifest row a process writes: `YYYYmmdd-HHMMSS-<6 hex>`. The manifest
 * merge replaces rows *by run id*, so two processes sharing an id would delete each other's rows;
 * the random suffix (16.7 million values) makes that practically impossible even for processes
 * started in the same second. The timestamp is local time because humans read these ids next to
 * their own clock, and it sorts chronologically as plain text.
 */
import { randomBytes } from 'node:crypto';
import { compactTimestamp } from '../config/timestamp.js';

export { compactTimestamp };

/** A fresh run id: `YYYYmmdd-HHMMSS-<6 hex>`, unique per process (per Runtime). */
export function newRunId(
  at: Date = new Date(),
  randomHex: () => string = () => randomBytes(3).toString('hex'),
): string {
  return `${compactTimestamp(at)}-${randomHex()}`;
}
