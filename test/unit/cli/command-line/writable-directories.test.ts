/**
 * The write check of the commands that write a task, on the real file system: a probe that leaves
 * nothing behind, /proc (where Node's recursive mkdir never returns) refused by name, and the
 * message for each kind of refusal. Permission refusals as another user are in the CLI e2e test.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../../../src/cli/command-line/exit-errors.js';
import {
  reasonOf,
  requireWritable,
  unwritableMessage,
  writeProblem,
} from '../../../../src/cli/command-line/writable-directories.js';
import { cleanUp, tempDir } from '../../../support/scratch.js';

afterEach(cleanUp);

describe('writeProblem', () => {
  it('finds nothing wrong with a writable directory, existing or to be made, and leaves nothing behind', () => {
    const root = tempDir('flower-writable-');
    mkdirSync(join(root, 'ws'));
    expect(writeProblem(join(root, 'ws'))).toBeUndefined();
    expect(writeProblem(join(root, 'new', 'deeper', 'ws'))).toBeUndefined();
    expect(readdirSync(root)).toEqual(['ws']);
    expect(readdirSync(join(root, 'ws'))).toEqual([]);
  });

  it('names /proc as the directory that takes no new ones, without hanging', () => {
    expect(writeProblem('/proc/nonexist/runs')).toEqual({
      refusedIn: '/proc',
      exists: false,
      code: 'ENOENT',
    });
  });
});

describe('the refusal', () => {
  it('puts the kernel codes in words', () => {
    expect(reasonOf('EACCES', '/srv')).toBe('permission denied');
    expect(reasonOf('EROFS', '/srv')).toBe('a read-only file system');
    expect(reasonOf('ENOENT', '/proc')).toBe('/proc takes no new directories');
    expect(reasonOf('EWHATEVER', '/srv')).toBe('the system refused it (EWHATEVER)');
  });

  it('names the directory, why, and the flag to use instead', () => {
    expect(
      unwritableMessage('workspace', '/srv/ws', { refusedIn: '/srv/ws', exists: true, code: 'EROFS' }),
    ).toBe(
      'cannot write in the workspace /srv/ws: a read-only file system. Run flower in a directory you can write, or give one with -w DIR (it is created if missing).',
    );
    expect(
      unwritableMessage('run directory', '/srv/ws/runs', {
        refusedIn: '/srv/ws',
        exists: false,
        code: 'EACCES',
      }),
    ).toBe(
      'cannot create the run directory /srv/ws/runs: permission denied in /srv/ws. Give one you can write with -r DIR, or run flower in a directory you can write.',
    );
    // The reason names the directory already: not twice.
    expect(
      unwritableMessage(
        'workspace',
        '/proc/x',
        { refusedIn: '/proc', exists: false, code: 'ENOENT' },
        'Elsewhere.',
      ),
    ).toBe('cannot create the workspace /proc/x: /proc takes no new directories. Elsewhere.');
  });

  it('is a usage error about the workspace first, then the run directory', () => {
    const root = tempDir('flower-writable-');
    expect(() =>
      requireWritable({ workspace: '/proc/nonexist', runDir: '/proc/nonexist/runs', writesWorkspace: false }),
    ).toThrow(UsageError);
    expect(() =>
      requireWritable({ workspace: root, runDir: '/proc/nonexist/runs', writesWorkspace: true }),
    ).toThrow(`cannot create the run directory /proc/nonexist/runs: /proc takes no new directories.`);
    expect(() =>
      requireWritable({ workspace: root, runDir: join(root, 'runs'), writesWorkspace: true }),
    ).not.toThrow();
    expect(readdirSync(root)).toEqual([]);
  });
});
