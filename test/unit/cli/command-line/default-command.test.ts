import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { shapeOf, withDefaultCommand } from '../../../../src/cli/command-line/default-command.js';

function program(): Command {
  const root = new Command('flower')
    .version('1.0.0', '-V, --version')
    .option('-w, --workspace <dir>')
    .option('-r, --run-dir <dir>')
    .option('-v, --verbose')
    .option('-W, --workbench')
    .option('-T, --trim');
  root.command('go [request...]').option('--timeout <seconds>').option('--new');
  root.command('run <target>');
  root.command('once <prompt>');
  root.command('setup');
  root.command('doctor');
  root.command('demo [dir]');
  return root;
}

const shape = shapeOf(program());
const rewrite = (...argv: string[]) => withDefaultCommand(argv, shape);

describe('shapeOf', () => {
  it('reads the global flags and their arity from the program', () => {
    expect([...shape.valueFlags].sort()).toEqual(['--run-dir', '--workspace', '-r', '-w']);
    expect(shape.switchFlags.has('-v')).toBe(true);
    expect(shape.switchFlags.has('--trim')).toBe(true);
    expect(shape.switchFlags.has('--version')).toBe(true);
  });

  it("knows every subcommand, setup and demo included, and commander's help command", () => {
    for (const name of ['go', 'run', 'once', 'setup', 'doctor', 'demo', 'help']) {
      expect(shape.commands.has(name)).toBe(true);
    }
  });
});

describe('withDefaultCommand', () => {
  it('appends go when nothing but global flags are given', () => {
    expect(rewrite()).toEqual(['go']);
    expect(rewrite('-v')).toEqual(['-v', 'go']);
    expect(rewrite('-w', '/tmp', '-T')).toEqual(['-w', '/tmp', '-T', 'go']);
  });

  it('inserts go before a request', () => {
    expect(rewrite('do X')).toEqual(['go', 'do X']);
    expect(rewrite('-w', '/tmp', 'do X')).toEqual(['-w', '/tmp', 'go', 'do X']);
    expect(rewrite('--workspace=/tmp', 'do X')).toEqual(['--workspace=/tmp', 'go', 'do X']);
  });

  it('inserts go before go flags, wherever the request is', () => {
    expect(rewrite('--timeout', '0', 'do X')).toEqual(['go', '--timeout', '0', 'do X']);
    expect(rewrite('do X', '--timeout', '0')).toEqual(['go', 'do X', '--timeout', '0']);
    expect(rewrite('--new')).toEqual(['go', '--new']);
  });

  it('leaves an explicit subcommand alone, so its words are never a request', () => {
    expect(rewrite('run')).toEqual(['run']);
    expect(rewrite('setup')).toEqual(['setup']);
    expect(rewrite('-v', 'once', 'hi')).toEqual(['-v', 'once', 'hi']);
    expect(rewrite('go', 'run')).toEqual(['go', 'run']);
  });

  it('leaves --help and --version to the program when no request is given', () => {
    expect(rewrite('--help')).toEqual(['--help']);
    expect(rewrite('-v', '-h')).toEqual(['-v', '-h']);
    expect(rewrite('--version')).toEqual(['--version']);
  });

  it('puts "--" and everything after it behind go', () => {
    expect(rewrite('--', '-not-a-flag')).toEqual(['go', '--', '-not-a-flag']);
  });

  it('does not treat the value of a global flag as the request', () => {
    expect(rewrite('-r', 'run', 'do X')).toEqual(['-r', 'run', 'go', 'do X']);
  });

  it('leaves a global value flag without its value to commander, instead of handing it "go"', () => {
    expect(rewrite('-w')).toEqual(['-w']);
    expect(rewrite('-w', '--new')).toEqual(['-w', '--new']);
    expect(rewrite('-r', '-v', 'do X')).toEqual(['-r', '-v', 'do X']);
  });
});
