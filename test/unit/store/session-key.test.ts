/**
 * The one key rule both backends apply (session-key.ts `checkSessionKey`), pure: what real Claude
 * Code keys look like is taken, what none looks like is refused with the reason, and
 * `subpath: ''` reads as the main transcript.
 */
import { describe, expect, it } from 'vitest';
import { checkSessionKey, isStorableSubpath, projectKeyFor } from '../../../src/store/session-key.js';

const uuid = '3f2a9c1e-7b4d-4e8a-9c61-0d5e2f7a8b90';

describe('checkSessionKey', () => {
  it('takes the keys real sessions have, unchanged: the SDK project key, a uuid, subagents/agent-<hex>', () => {
    for (const workspace of ['/tmp/x/ws', '/home/me/my.project (copy)', `/${'deep/'.repeat(60)}ws`]) {
      const projectKey = projectKeyFor(workspace);
      for (const key of [
        { projectKey, sessionId: uuid },
        { projectKey, sessionId: uuid, subpath: 'subagents/agent-a1b2c3d4e5f60718' },
        { projectKey, sessionId: uuid, subpath: 'subagents/workflows/run-1/agent-0f' },
        { projectKey },
      ]) {
        expect(checkSessionKey(key)).toBe(key);
      }
    }
  });

  it("reads subpath '' as the main key, without touching its input", () => {
    const key = { projectKey: '-tmp-ws', sessionId: uuid, subpath: '' };
    expect(checkSessionKey(key)).toStrictEqual({ projectKey: '-tmp-ws', sessionId: uuid });
    expect(key.subpath).toBe('');
  });

  it('refuses a project key or session id with "/", "\\", "..", a NUL, or nothing, saying what real ones are', () => {
    for (const bad of ['', '.', '..', 'a/b', '/', 'a\\b', 'x..y', 'a\u0000b']) {
      const project = checkSessionKey({ projectKey: bad, sessionId: uuid });
      expect(project, bad).toMatch(/project key/);
      expect(project, bad).toMatch(/workspace path/);
      const session = checkSessionKey({ projectKey: '-tmp-ws', sessionId: bad });
      expect(session, bad).toMatch(/session id/);
      expect(session, bad).toMatch(/uuid/);
      if (bad !== '') expect(session, bad).toContain(JSON.stringify(bad));
    }
    expect(checkSessionKey({ projectKey: '-tmp-ws', sessionId: undefined as unknown as string })).toMatch(
      /missing session id/,
    );
  });

  it('refuses a subpath with an empty, "." or ".." segment, a leading or trailing "/", a "\\" or a NUL', () => {
    for (const bad of [
      '..',
      '../evil',
      'subagents/../../evil',
      '/etc/passwd',
      'subagents/',
      'a//b',
      '.',
      './a',
      'subagents\\agent-1',
      'agent-\u0000',
    ]) {
      expect(isStorableSubpath(bad), bad).toBe(false);
      expect(checkSessionKey({ projectKey: '-tmp-ws', sessionId: uuid, subpath: bad }), bad).toMatch(
        /^subpath .*subagents\/agent-<id>/,
      );
    }
    for (const good of ['subagents/agent-1', 'journal', 'subagents/agent-a.b', 'a/b/c'])
      expect(isStorableSubpath(good), good).toBe(true);
    expect(isStorableSubpath('')).toBe(false);
  });
});
