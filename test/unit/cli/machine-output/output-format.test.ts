import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  applyModelFlag,
  MODEL_HELP,
  OUTPUT_FORMATS,
  outputFormatOption,
  parseModel,
} from '../../../../src/cli/machine-output/output-format.js';
import { buildProgram } from '../../../../src/cli/main.js';

/** The two flags as a command registers them, parsed the way commander hands them to an action. */
function parsed(argv: string[]): { outputFormat?: string; model?: string; error?: string } {
  let error = '';
  const command = new Command('once')
    .exitOverride()
    .configureOutput({ writeErr: (text) => (error += text) })
    .addOption(outputFormatOption())
    .option('--model <name>', MODEL_HELP, parseModel);
  try {
    command.parse(argv, { from: 'user' });
  } catch (thrown) {
    if (!(thrown instanceof CommanderError)) throw thrown;
    return { error };
  }
  return command.opts();
}

describe('--output-format', () => {
  it('defaults to text and takes each of the three formats', () => {
    expect(parsed([]).outputFormat).toBe('text');
    for (const format of OUTPUT_FORMATS)
      expect(parsed(['--output-format', format]).outputFormat).toBe(format);
  });

  it('refuses anything else with a usage error naming the allowed values', () => {
    const { error } = parsed(['--output-format', 'xml']);
    expect(error).toContain("argument 'xml' is invalid");
    expect(error).toContain('text, json, stream-json');
  });
});

describe('--model', () => {
  it('takes a model name, trimmed', () => {
    expect(parsed(['--model', ' claude-sonnet-4-5 ']).model).toBe('claude-sonnet-4-5');
    expect(parsed(['--model', 'opus[1m]']).model).toBe('opus[1m]');
  });

  it('refuses an empty name, a name with spaces, and an option in its place', () => {
    for (const bad of ['', 'two words', '-v']) {
      expect(() => parseModel(bad)).toThrow('give a model name, e.g. --model claude-sonnet-4-5');
    }
  });

  it('does what ANTHROPIC_MODEL does, winning over a value already set', () => {
    const env: Record<string, string | undefined> = { ANTHROPIC_MODEL: 'from-the-shell' };
    applyModelFlag('from-the-flag', env);
    expect(env.ANTHROPIC_MODEL).toBe('from-the-flag');
    applyModelFlag(undefined, env);
    expect(env.ANTHROPIC_MODEL).toBe('from-the-flag');
  });
});

describe('the commands that run agents', () => {
  it('go, run and once each take --output-format and --model, and their help explains both', () => {
    const program = buildProgram();
    for (const name of ['go', 'run', 'once']) {
      const command = program.commands.find((candidate) => candidate.name() === name)!;
      const help = command.helpInformation().replace(/\s+/g, ' ');
      expect(help, name).toContain('--output-format <format>');
      expect(help, name).toContain('stream-json: one JSON event per line');
      expect(help, name).toContain('--model <name>');
      expect(help, name).toContain('ANTHROPIC_MODEL');
    }
  });
});
