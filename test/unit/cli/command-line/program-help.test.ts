import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../../../src/cli/command-line/exit-errors.js';
import { HELP_VARIABLES, programHelpAfter } from '../../../../src/cli/command-line/program-help.js';

const src = join(import.meta.dirname, '..', '..', '..', '..', 'src');

/** Every TypeScript source but the help itself, as one text. */
function sources(dir = src): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return sources(path);
      return entry.name.endsWith('.ts') && entry.name !== 'program-help.ts' ? readFileSync(path, 'utf8') : '';
    })
    .join('\n');
}

describe('flower --help, after the commands', () => {
  const help = programHelpAfter();

  it('has examples, every exit code main returns, and the environment', () => {
    expect(help).toContain('Examples:\n  flower "write a CLI that counts words"');
    for (const code of Object.values(EXIT)) expect(help).toMatch(new RegExp(`^ {2}${code} +\\S`, 'm'));
    for (const [name] of HELP_VARIABLES) expect(help).toMatch(new RegExp(`^ {2}${name} +\\S`, 'm'));
  });

  it('lists only variables flower reads', () => {
    const code = sources();
    for (const [name] of HELP_VARIABLES) expect(code, name).toContain(name);
  });
});
