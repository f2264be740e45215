/**
 * Which model endpoints have ever answered this task: `<run dir>/endpoints.json`,
 * `{ "127.0.0.1:8080": { "firstAnswer": "<ISO time>" } }`, keyed by the host:port of
 * `ANTHROPIC_BASE_URL` (what the reachability probe can test).
 *
 * Why it exists: a connection failure means two different things. An endpoint that answered this
 * task before and stops answering is an outage, worth waiting out for an hour. One that never
 * answered it (a typo in the port, a gateway that was never started) will not start answering by
 * itself, and waiting only hides the mistake: that is stopped at once with one line.
 *
 * Invariants:
 * - An answer is any HTTP response the binary reports: a model reply, or an error status (a 529
 *   also proves something listens). Connection failures never count.
 * - Recorded once per process and endpoint, under the file lock (asides have their own run dir).
 * - Lives in the run directory, not the session store: it is a fact about this task and this
 *   endpoint, and a store holds no endpoint at all (a task moved to a new URL starts unproven).
 * - A task from before this file existed has none; there a manifest row that succeeded or cost
 *   money stands in for it (its endpoint answered then), so an upgrade in the middle of a long task
 *   does not turn its next outage into a stop. A file that cannot be read counts as "answered":
 *   the doubt goes to waiting, the behaviour flower had before.
 * - Never throws: it decides how long to wait, never whether work is lost.
 */
import { join } from 'node:path';
import { endpointOf } from '../config/reachability.js';
import { type JsonDocumentCodec, peekJsonDocument, updateJsonDocument } from './locked-json-file.js';
import { peekManifest } from './manifest.js';
import { emitTaskChange } from './task-changes.js';

export const ENDPOINTS_FILE = 'endpoints.json';

interface EndpointRecord {
  firstAnswer: string;
}

type EndpointsDocument = Record<string, EndpointRecord>;

const endpointsCodec: JsonDocumentCodec<EndpointsDocument> = {
  empty: () => ({}),
  decode: (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const document: EndpointsDocument = {};
    for (const [key, record] of Object.entries(value)) {
      const firstAnswer = (record as { firstAnswer?: unknown } | null)?.firstAnswer;
      if (typeof firstAnswer === 'string') document[key] = { firstAnswer };
    }
    return document;
  },
};

/** `host:port` of a base URL, or undefined when it is not a URL. */
export function endpointKey(baseUrl: string | undefined): string | undefined {
  try {
    const { host, port } = endpointOf(baseUrl);
    return `${host}:${port}`;
  } catch {
    return undefined;
  }
}

export class EndpointHistory {
  private readonly runDir: string;
  private readonly path: string;
  private readonly key: string | undefined;
  private known: boolean | undefined;

  constructor(runDir: string, baseUrl: string | undefined) {
    this.runDir = runDir;
    this.path = join(runDir, ENDPOINTS_FILE);
    this.key = endpointKey(baseUrl);
  }

  /** Whether the endpoint has answered this task at least once (this process or an earlier one). */
  answered(): boolean {
    if (this.known) return true;
    if (this.key === undefined) return false;
    const peeked = peekJsonDocument(this.path, endpointsCodec);
    if (peeked.state === 'missing') return this.answeredBeforeTheRecord();
    this.known = peeked.state === 'corrupt' || this.key in peeked.document;
    return this.known;
  }

  /** A run directory with no record yet: did an earlier flower's step get an answer? */
  private answeredBeforeTheRecord(): boolean {
    const rows = peekManifest(this.runDir).document;
    this.known = rows.some(
      (row) => row.ok === true || (typeof row.cost_usd === 'number' && row.cost_usd > 0),
    );
    return this.known;
  }

  /** Notes that the endpoint answered; writes the file the first time per process. */
  recordAnswer(): void {
    if (this.known || this.key === undefined) return;
    this.known = true;
    const key = this.key;
    try {
      const firstAnswer = new Date().toISOString();
      const written = updateJsonDocument(this.path, endpointsCodec, (current) =>
        key in current ? current : { ...current, [key]: { firstAnswer } },
      );
      emitTaskChange(this.runDir, {
        kind: 'endpoint',
        key,
        firstAnswer: written[key]?.firstAnswer ?? firstAnswer,
      });
    } catch {
      // Unwritable run directory: the manifest reports that; here it only costs a faster stop later.
    }
  }
}

/** The endpoints file of `runDir` as it is (for the shared store's sync). */
export function readEndpoints(runDir: string): Record<string, { firstAnswer: string }> {
  return peekJsonDocument(join(runDir, ENDPOINTS_FILE), endpointsCodec).document;
}

/** Adds endpoints another process recorded, emitting nothing (the shared store's pull). */
export function addEndpoints(runDir: string, found: Record<string, { firstAnswer: string }>): void {
  updateJsonDocument(join(runDir, ENDPOINTS_FILE), endpointsCodec, (current) => ({ ...found, ...current }));
}
