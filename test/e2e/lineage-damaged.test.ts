/**
 * Issue 10 §2: a damaged `runs/lineage.json` (truncated, random bytes, `null`, a directory) used to
 * be set aside without a word, and the step quietly started a new session (a directory even meant
 * sessions were never recorded again). Now: one warning, and the step's session is found again
 * from the manifest and the session store, with the reason.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLARIFIER_RULES } from '../../src/agents/rules.js';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { contentText, mock, type RecordedRequest, systemText } from '../../src/testing/index.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { type Harness, startHarness } from './runtime-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
  await cleanUp();
});

const spec: AgentSpec = { name: 'work', instructions: '', allowedTools: ['Read'], permissionMode: 'default' };

const damage: Record<string, (file: string) => void> = {
  truncated: (file) => writeFileSync(file, readFileSync(file, 'utf8').slice(0, 25)),
  'random bytes': (file) => writeFileSync(file, randomBytes(300)),
  null: (file) => writeFileSync(file, 'null'),
  'a directory': (file) => {
    rmSync(file);
    mkdirSync(file);
  },
};

describe('a damaged runs/lineage.json (real SDK and binary)', () => {
  it.each(Object.keys(damage))(
    '%s: set aside with a warning, rebuilt with the reason, and the step resumes its session',
    async (kind) => {
      harness = await startHarness({ main: [], fallback: mock.text('Step done.') });
      const first = harness.runtime();
      const done = await first.run(spec, 'Do the work.', { continuous: true });
      first.close();
      const runDir = join(harness.workspace, 'runs');
      const lineage = join(runDir, 'lineage.json');
      damage[kind]!(lineage);

      const warnings: string[] = [];
      const second = harness.runtime({ onWarning: (line) => warnings.push(line) });
      const again = await second.run(spec, 'Do the work.', { continuous: true });
      second.close();

      expect(again).toMatchObject({ ok: true, resumed: true, sessionId: done.sessionId });
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toMatch(
        /lineage\.json (could not be read|is a directory).* It was kept as .*lineage\.json\.corrupt-/,
      );
      expect(warnings[1]).toBe(
        `Rebuilt ${lineage} from the manifest and the session store: work continues session ${done.sessionId} ` +
          `(the session of its newest manifest row, last active ${warnings[1]?.match(/last active (\d\d:\d\d:\d\d)/)?.[1]}).`,
      );
      // Sessions are recorded again: the file is a file with the step in it.
      expect(statSync(lineage).isFile()).toBe(true);
      expect(JSON.parse(readFileSync(lineage, 'utf8')).steps).toEqual({ work: done.sessionId });
      expect(readdirSync(runDir).filter((name) => name.startsWith('lineage.json.corrupt-'))).toHaveLength(1);
    },
  );
});

const CLARIFIER = CLARIFIER_RULES.split('\n')[0]!;
const BRIEF =
  '## Goal\nCount words.\n\n## Acceptance\n- a number\n\n## Boundaries\n- none\n\n## Unknowns & assumptions\n- none';

describe('flower with a damaged lineage.json', () => {
  it('says so on the screen (the wake banner used to set it aside silently) and continues the step', async () => {
    let replies = 0;
    const model = await startMock({
      main: [],
      fallback: (request: RecordedRequest) => {
        if (!systemText(request.body).includes(CLARIFIER)) return mock.text('not scripted');
        replies += 1;
        // The first run ends without a brief (the step fails); the second one writes it.
        return mock.text(replies === 1 ? 'Let me think about the scope first.' : BRIEF);
      },
    });
    const workspace = tempDir('flower-lineage-cli-');
    const env = mockedEnv(model);
    const args = ['-w', workspace, '--clarify-only', '--timeout', '0', 'count the words'];
    const first = await runFlower(args, { env });
    expect(first.status).toBe(1);
    const session = JSON.parse(readFileSync(join(workspace, 'runs', 'lineage.json'), 'utf8')).steps.clarify;
    writeFileSync(join(workspace, 'runs', 'lineage.json'), '{"workspace": "');

    const second = await runFlower(args, { env });
    expect(second.status).toBe(0);
    expect(second.stdout).toMatch(/! .*lineage\.json could not be read .* It was kept as /);
    expect(second.stdout).toContain(
      `clarify continues session ${session} (the session of its newest manifest row`,
    );
    expect(second.stdout).toContain('<- resumed the last session');
    const last = model.mainRequests().at(-1)!;
    expect(JSON.stringify(last.body?.messages)).toContain('Let me think about the scope first.');
    expect(contentText(last.body?.messages?.[0]?.content ?? '')).toContain('count the words');
  });
});
