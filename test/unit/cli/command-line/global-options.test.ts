import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../../src/cli/command-line/exit-errors.js';
import {
  addGlobalOptions,
  fileInTheWay,
  globalOptions,
} from '../../../../src/cli/command-line/global-options.js';

const root = mkdtempSync(join(tmpdir(), 'flower-globals-'));
writeFileSync(join(root, 'file.txt'), 'x');
mkdirSync(join(root, 'dir'));

function parsed(...argv: string[]) {
  const program = addGlobalOptions(new Command('flower').exitOverride());
  program.parse(argv, { from: 'user' });
  return () => globalOptions(program, root);
}

describe('fileInTheWay', () => {
  it('is undefined for a directory, or a path that can be created', () => {
    expect(fileInTheWay(join(root, 'dir'))).toBeUndefined();
    expect(fileInTheWay(join(root, 'dir', 'new', 'deeper'))).toBeUndefined();
  });

  it('names the file for a file, or for a path under one', () => {
    expect(fileInTheWay(join(root, 'file.txt'))).toBe(join(root, 'file.txt'));
    expect(fileInTheWay(join(root, 'file.txt', 'sub', 'x'))).toBe(join(root, 'file.txt'));
  });
});

describe('globalOptions', () => {
  it('resolves -w against the directory and -r against the workspace', () => {
    expect(parsed('-w', 'dir', '-r', 'state')()).toMatchObject({
      workspace: join(root, 'dir'),
      runDir: join(root, 'dir', 'state'),
    });
  });

  it('refuses a workspace or run directory that is a file, as a usage error naming it', () => {
    expect(parsed('-w', 'file.txt')).toThrow(UsageError);
    expect(parsed('-w', 'file.txt')).toThrow(`-w file.txt: ${join(root, 'file.txt')} is a file.`);
    expect(parsed('-r', 'file.txt/runs')).toThrow(`${join(root, 'file.txt')} is a file, so`);
  });
});
