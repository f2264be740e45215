/**
 * What people expect of a terminal tool (issue 9, §4–§5), in a real pseudo-terminal from `script`,
 * which reports 0 columns exactly like the CI runners and containers that showed the bug:
 * model text is printed at 80 columns instead of blank, a live status row says what flower waits
 * for while the model works, NO_COLOR / FORCE_COLOR / TERM=dumb are obeyed, and Ctrl-C at the first
 * prompt exits 130.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { isolatedEnv, mockedEnv, PtySession, runFlower, tempDir } from './cli-harness.js';

const ANSWER = 'The answer is forty-two, and it fits on one line of an eighty-column terminal.';
/** A colour or style (SGR) sequence, as picocolors writes them. */
const SGR = /\x1b\[[0-9;]*m/;

let model: MockModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

/** A mock model whose one reply takes `delayMs`, and the environment pointing at it (colour unset). */
async function slowModel(delayMs: number, extra: Record<string, string | undefined> = {}) {
  model = await startMockModel({ main: [{ delayMs, text: ANSWER }] });
  const env = mockedEnv(model);
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

describe('flower once on a pty that reports no size', () => {
  it('prints the model text (at 80 columns), not blank lines', async () => {
    const env = await slowModel(0, { TERM: 'xterm' });
    const pty = PtySession.flower(['-w', tempDir('once-width'), 'once', 'hi'], env);
    expect(await pty.exited()).toBe(0);
    expect(pty.screen).toContain(ANSWER);
    expect(pty.screen).toMatch(/\+ finished · 1 turn/);
  });

  it('shows a live status with the elapsed time while the model works', async () => {
    const env = await slowModel(3500, { TERM: 'xterm' });
    const pty = PtySession.flower(['-w', tempDir('once-live'), 'once', 'hi'], env);
    const statusAt = await pty.waitFor('~ waiting for the model · 0:02', 0, 30_000);
    expect(await pty.exited()).toBe(0);
    expect(pty.screen.indexOf(ANSWER)).toBeGreaterThan(statusAt);
    // The status row is erased when the run ends: nothing of it follows the summary.
    expect(pty.screen.slice(pty.screen.indexOf('+ finished'))).not.toContain('waiting for');
  });
});

describe('colour and escape sequences', () => {
  it('uses colour on a terminal by default', async () => {
    const env = await slowModel(0, { TERM: 'xterm' });
    const pty = PtySession.flower(['-w', tempDir('color-on'), 'once', 'hi'], env);
    expect(await pty.exited()).toBe(0);
    expect(pty.raw).toMatch(SGR);
  });

  it('NO_COLOR turns colour off on a terminal', async () => {
    const env = await slowModel(0, { TERM: 'xterm', NO_COLOR: '1' });
    const pty = PtySession.flower(['-w', tempDir('no-color'), 'once', 'hi'], env);
    expect(await pty.exited()).toBe(0);
    expect(pty.screen).toContain(ANSWER);
    expect(pty.raw).not.toMatch(SGR);
  });

  it('TERM=dumb gets no escape sequence at all, even while the model works', async () => {
    const env = await slowModel(1500, { TERM: 'dumb' });
    const pty = PtySession.flower(['-w', tempDir('dumb'), 'once', 'hi'], env);
    expect(await pty.exited()).toBe(0);
    expect(pty.raw).toContain(ANSWER);
    expect(pty.raw).not.toContain('\x1b');
  });

  it('FORCE_COLOR turns colour on into a pipe; a pipe gets no status row', async () => {
    const env = await slowModel(1500, { FORCE_COLOR: '1' });
    const run = await runFlower(['-w', tempDir('force'), 'once', 'hi'], { env });
    expect(run.status).toBe(0);
    // The renderer's own lines are coloured too (the dim status line after the prose), not only
    // the summary that picocolors would have coloured by itself.
    expect(run.stdout).toMatch(/\x1b\[2m {2}- (context \S+ · )?total \$/);
    expect(run.stdout).not.toContain('waiting for the model');
    expect(run.stdout).not.toContain('\x1b[K');
  });

  it('a pipe gets no colour by default', async () => {
    const env = await slowModel(0);
    const run = await runFlower(['-w', tempDir('pipe'), 'once', 'hi'], { env });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(ANSWER);
    expect(run.stdout).not.toContain('\x1b');
  });
});

describe('Ctrl-C at the first prompt', () => {
  it('exits 130, having started nothing', async () => {
    const workspace = tempDir('ctrl-c');
    const pty = PtySession.flower(
      ['-w', workspace],
      isolatedEnv({ ANTHROPIC_API_KEY: 'sk-ant-never-used', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }),
    );
    await pty.waitFor('What should flower do?');
    await pty.waitFor('> ');
    pty.type('\x03');
    expect(await pty.exited()).toBe(130);
    expect(pty.screen).toContain('quit (Ctrl-C); nothing was started');
  });
});
