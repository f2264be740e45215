/**
 * fast-check generators for random transcripts in Claude Code's shape: prompts, replies, tool
 * calls (glances, builds, large reads, images), parallel calls (some of whose results may be
 * missing), denials, interrupts, orphaned calls left by a disconnect, synthetic API-error turns, compact summaries, meta entries and
 * chained attachment entries and bookkeeping entries of unknown types.
 */
import fc from 'fast-check';
import { type Entry, TranscriptBuilder } from './transcript-builder.js';

const GLANCES = ['git status', 'ls -la', 'git diff HEAD', 'ps aux | grep node', 'cat package.json'];
const OTHERS = ['npm run build', 'npm test', 'make', 'python train.py'];

export type Step =
  | { kind: 'prompt' }
  | { kind: 'say' }
  | { kind: 'bash'; command: string; size: number }
  | { kind: 'read'; size: number }
  | { kind: 'image' }
  | { kind: 'denied'; command: string }
  | { kind: 'interrupted' }
  | { kind: 'orphan'; thenResume: boolean }
  | { kind: 'apiError' }
  | { kind: 'parallel'; calls: Array<{ denied: boolean; lost: boolean; command: string; size: number }> }
  | { kind: 'meta' }
  | { kind: 'compact' }
  | { kind: 'marker' }
  | { kind: 'attachment' };

const size = fc.oneof(
  fc.integer({ min: 0, max: 200 }),
  fc.integer({ min: 1500, max: 2500 }),
  fc.integer({ min: 2000, max: 8000 }),
);
const command = fc.constantFrom(...GLANCES, ...OTHERS);

export const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'prompt' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'say' as const }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('bash' as const), command, size }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const), size }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'image' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('denied' as const), command }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'interrupted' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('orphan' as const), thenResume: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'apiError' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('parallel' as const),
      calls: fc.array(
        // `lost`: the connection dropped before this call's result was written.
        fc.record({ denied: fc.boolean(), lost: fc.nat(5).map((roll) => roll === 0), command, size }),
        { minLength: 2, maxLength: 3 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'meta' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'compact' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'marker' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'attachment' as const }) },
);

const text = (length: number, seed: number): string => `${seed}:`.padEnd(length, 'abcdefghij'[seed % 10]);

/** Build the transcript a list of steps describes (it always opens with a prompt). */
export function buildTranscript(steps: readonly Step[], prefix = 't'): Entry[] {
  const t = new TranscriptBuilder(prefix);
  t.prompt('Do the task.');
  steps.forEach((step, index) => {
    switch (step.kind) {
      case 'prompt':
        t.prompt(`Follow-up ${index}`);
        break;
      case 'say':
        t.say(`Thinking aloud ${index}`);
        break;
      case 'bash':
        t.bash(step.command, text(step.size, index));
        break;
      case 'read':
        t.tool('Read', { file_path: `src/f${index}.ts` }, text(step.size, index));
        break;
      case 'image':
        t.tool('Read', { file_path: `shot${index}.png` }, '', {
          blocks: [
            { type: 'text', text: text(3000, index) },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          ],
        });
        break;
      case 'denied':
        t.denied(step.command);
        break;
      case 'interrupted':
        t.interrupted('sleep 600');
        break;
      case 'orphan':
        t.orphan('npm test');
        if (step.thenResume) t.prompt('Continue where you left off.');
        break;
      case 'apiError':
        t.apiError();
        break;
      case 'parallel': {
        const ids = step.calls.map((call) => t.call('Bash', { command: call.command }));
        step.calls.forEach((call, position) => {
          const id = ids[position] as string;
          if (call.lost) return;
          if (call.denied) {
            t.result(id, `Permission to use Bash with command ${call.command} has been denied.`, {
              isError: true,
              extra: { toolDenialKind: 'permission-rule' },
            });
          } else {
            t.result(id, text(call.size, index * 10 + position));
          }
        });
        break;
      }
      case 'meta':
        t.meta(`<local-command-stdout>${index}</local-command-stdout>`);
        break;
      case 'compact':
        t.compactSummary(text(4000, index));
        break;
      case 'marker':
        t.marker('queue-operation', { operation: 'enqueue', content: `${index}` });
        break;
      case 'attachment':
        t.attachment(`reminder ${index}`);
        break;
    }
  });
  return t.entries;
}

export const transcriptArbitrary = (maxSteps = 40): fc.Arbitrary<Entry[]> =>
  fc.array(stepArbitrary, { maxLength: maxSteps }).map((steps) => buildTranscript(steps));
