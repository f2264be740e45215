/**
 * Issue 20 through the bequest's own writer (`leaveBequest` with a scripted runner, real files):
 * observation 2 — CLAUDE.md and AGENTS.md held three secrets in clear and the model's live escape
 * sequences; observation 7 — another tool's `<!-- flower:begin … -->` block was overwritten, then
 * one more flower block was appended per task.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Workbench } from '../../../src/agents/workbench.js';
import {
  blockBegin,
  flowerBlocks,
  LEGACY_BLOCK_BEGIN,
  LEGACY_BLOCK_END,
} from '../../../src/bequest/managed-block.js';
import { forgetSecrets } from '../../../src/output/secrets.js';
import type { FlowerEvent } from '../../../src/runtime/events.js';
import { BEQUEST_EVENT, BEQUEST_FILES, leaveBequest } from '../../../src/workflow/bequest-turn.js';
import { newContext, type WorkflowContext } from '../../../src/workflow/context.js';
import {
  HOSTILE_ESCAPES,
  HOSTILE_SECRET_CORES,
  HOSTILE_SECRETS,
  RAW_CONTROL,
} from '../../support/hostile-payloads.js';
import { FakeRunner } from '../workflow/fake-runner.js';

const REPLY = [
  '## What this is',
  'hello.py, a greeting.',
  '## Acceptance: met and not met',
  '- prints hello: met',
  '## Dead ends',
  'none',
  '## The workbench and how to read it',
  '.flower/notes first.',
].join('\n');

const USER = '# House rules\n\nUse tabs. Never push to main.\n';
const OTHER_TOOL = '<!-- flower:begin other-tool -->\nmine\n<!-- flower:end -->';

// Values of the run's environment that have no recognisable shape: only the process mask knows them.
const ENV_KEY = 'gw-9d8c7b6a5f4e3d2c1b0a';
const ENV_TOKEN = 'plain-looking-0123456789-token';

beforeEach(() => {
  vi.stubEnv('ANTHROPIC_API_KEY', ENV_KEY);
  vi.stubEnv('FLOWER_TEST_SERVICE_TOKEN', ENV_TOKEN);
  forgetSecrets();
});

afterEach(() => {
  vi.unstubAllEnvs();
  forgetSecrets();
});

function workspace(): string {
  return mkdtempSync(join(tmpdir(), 'flower-bequest-'));
}

async function bequeath(
  ws: string,
  options: { reply?: string; runDir?: string; ctx?: WorkflowContext } = {},
): Promise<FlowerEvent[]> {
  const events: FlowerEvent[] = [];
  const runner = new FakeRunner(
    () => ({ text: options.reply ?? REPLY }),
    ws,
    join(ws, options.runDir ?? 'runs'),
  );
  const ctx = options.ctx ?? newContext();
  ctx.onEvent = (event) => events.push(event);
  await leaveBequest(runner, ctx, { workspace: ws, workbench: new Workbench(ws), workStep: 'work' });
  return events;
}

const read = (ws: string, name: string) => readFileSync(join(ws, name), 'utf8');
const warnings = (events: FlowerEvent[]) =>
  events.filter(
    (event) => event.kind === 'system' && event.payload.subtype === BEQUEST_EVENT && event.payload.warning,
  );

describe('the bequest files hold nothing that leaks or runs (observation 2)', () => {
  it("masks every secret and makes every escape inert inside the block, and leaves the user's text as it was", async () => {
    const ws = workspace();
    for (const name of BEQUEST_FILES) writeFileSync(join(ws, name), USER);
    const hostile = [
      ...Object.values(HOSTILE_SECRETS),
      ...Object.values(HOSTILE_ESCAPES),
      `the key: ${ENV_KEY}`,
      `printenv said ${ENV_TOKEN}`,
    ].join('\n');
    const reply = REPLY.replace('hello.py, a greeting.', `hello.py, a greeting.\n${hostile}`).replace(
      'none',
      `tried ${HOSTILE_ESCAPES.title}${HOSTILE_ESCAPES.clipboard} and ${HOSTILE_SECRETS.dbPassword}`,
    );
    // flower's own facts quote untrusted text too (an abort reason, assumptions).
    const ctx = newContext({
      failedAt: 'work',
      aborted: `a check printed ${HOSTILE_ESCAPES.clear} ${HOSTILE_SECRETS.github}`,
      assumptions: [`${HOSTILE_ESCAPES.hyperlink} ${ENV_TOKEN}`, `${HOSTILE_ESCAPES.csi8bit}red`],
    });
    await bequeath(ws, { reply, ctx });

    for (const name of BEQUEST_FILES) {
      const text = read(ws, name);
      for (const core of [...HOSTILE_SECRET_CORES, ENV_KEY, ENV_TOKEN])
        expect(text, name).not.toContain(core);
      expect(text, name).not.toMatch(RAW_CONTROL);
      expect(text.startsWith(`${USER}\n${blockBegin('runs')}\n`), name).toBe(true);
      const [block] = flowerBlocks(text);
      // Visible, not dropped: a reader sees that a sequence was there.
      expect(block?.body).toContain('␛]0;PWNED-TITLE␇');
      expect(block?.body).toContain('[U+009B]31m');
      expect(block?.body).toContain('a greeting.');
    }
  });

  it("never masks or neutralises the user's own text outside the block", async () => {
    const ws = workspace();
    const user = `# Mine\r\n\tindented\r\nexample: ${HOSTILE_SECRETS.github} \x1b[1mbold\x1b[0m\r\n`;
    const after = `\n## Mine, after\n${HOSTILE_SECRETS.dbPassword}\n`;
    writeFileSync(join(ws, 'CLAUDE.md'), user);
    await bequeath(ws, { reply: `${REPLY}\n${HOSTILE_SECRETS.github}` });
    writeFileSync(join(ws, 'CLAUDE.md'), `${read(ws, 'CLAUDE.md')}${after}`);
    await bequeath(ws, { reply: `${REPLY}\nagain` });
    const text = read(ws, 'CLAUDE.md');
    expect(text.startsWith(user)).toBe(true);
    expect(text.endsWith(after)).toBe(true);
    const [block] = flowerBlocks(text);
    expect(block?.body).toContain('again');
    expect(text.slice(0, block!.start)).toBe(`${user}\n`);
  });
});

describe("flower's block is its own and appears once (observation 7)", () => {
  for (const runDirs of [
    ['runs', 'runs', 'runs'],
    ['runs-1', 'runs-2', 'work/runs-3'],
  ]) {
    it(`keeps another tool's flower:begin block byte for byte through three tasks ending (${runDirs.join(', ')})`, async () => {
      const ws = workspace();
      const user = `${USER}\n${OTHER_TOOL}\n`;
      for (const name of BEQUEST_FILES) writeFileSync(join(ws, name), user);
      for (const [index, runDir] of runDirs.entries()) {
        const events = await bequeath(ws, { runDir, reply: REPLY.replace('a greeting', `task ${index}`) });
        expect(warnings(events)).toEqual([]);
        for (const name of BEQUEST_FILES) {
          const text = read(ws, name);
          expect(text.startsWith(`${user}\n`), name).toBe(true);
          expect(text.split(OTHER_TOOL)).toHaveLength(2);
          const blocks = flowerBlocks(text);
          expect(blocks).toHaveLength(1);
          expect(blocks[0]).toMatchObject({ task: runDir, start: user.length + 1 });
          expect(blocks[0]?.body).toContain(`task ${index}`);
          expect(text.match(/<!-- flower:begin task=/g)).toHaveLength(1);
        }
      }
    });
  }

  it('folds the duplicates an earlier flower appended into one block, and says so', async () => {
    const ws = workspace();
    const old = (body: string) => `${LEGACY_BLOCK_BEGIN}\n${body}\n${LEGACY_BLOCK_END}`;
    const user = `${USER}\n${OTHER_TOOL}\n`;
    writeFileSync(
      join(ws, 'CLAUDE.md'),
      `${user}\n${old('task 1')}\n\n${old('task 2')}\n\n${old('task 3')}\n`,
    );
    const events = await bequeath(ws);
    const text = read(ws, 'CLAUDE.md');
    expect(flowerBlocks(text)).toMatchObject([{ task: 'runs', start: user.length + 1 }]);
    expect(text.endsWith(`${LEGACY_BLOCK_END}\n`)).toBe(false);
    expect(text.startsWith(user)).toBe(true);
    const [folded] = warnings(events);
    expect(folded?.text).toBe(
      `${join(ws, 'CLAUDE.md')} held 3 of flower's blocks (an earlier flower appended one per task); they were folded into one`,
    );
    expect((folded?.payload as { data?: unknown } | undefined)?.data).toEqual({
      path: join(ws, 'CLAUDE.md'),
      folded: 2,
    });
    // Once folded, nothing more to say.
    expect(warnings(await bequeath(ws))).toEqual([]);
  });

  it('leaves a marker of its own that pairs with nothing where it is, and says so every time', async () => {
    const ws = workspace();
    const broken = `${USER}\n${blockBegin('runs')}\nits end was deleted\n`;
    writeFileSync(join(ws, 'CLAUDE.md'), broken);
    const first = warnings(await bequeath(ws));
    expect(first.map((event) => event.text)).toEqual([
      `${join(ws, 'CLAUDE.md')} has flower markers that pair with nothing (1 begin marker without an end); they were left as they are and the bequest was appended at the end; delete those markers to silence this`,
    ]);
    const second = warnings(await bequeath(ws));
    expect(second[0]?.text).toContain('the bequest was written in its block');
    const text = read(ws, 'CLAUDE.md');
    expect(text.startsWith(broken)).toBe(true);
    expect(flowerBlocks(text)).toHaveLength(1);
  });
});
