import { describe, expect, it } from 'vitest';
import {
  ensureSandbox,
  isYes,
  sandboxLine,
  UNSANDBOXED_LINE,
  unavailableQuestion,
  unavailableRefusal,
} from '../../../../src/cli/interaction/sandbox-gate.js';
import type { SandboxAvailability } from '../../../../src/runtime/sandbox/availability.js';
import { defaultSandboxPolicy } from '../../../../src/runtime/sandbox/policy.js';

const missing: SandboxAvailability = {
  available: false,
  problem: 'bubblewrap (bwrap) not found on PATH',
  fix: 'sudo apt-get install -y bubblewrap socat',
};
const present: SandboxAvailability = { available: true, engine: 'bubblewrap' };

/** The gate with a scripted availability and answer; records what it said and asked. */
function gate(availability: SandboxAvailability, options: { interactive: boolean; answer?: boolean }) {
  const said: string[] = [];
  const asked: string[] = [];
  const io = {
    interactive: options.interactive,
    say: (line: string) => said.push(line),
    availability: () => availability,
    ask: async (question: string) => {
      asked.push(question);
      return options.answer ?? false;
    },
  };
  return { io, said, asked };
}

describe('ensureSandbox', () => {
  it('goes ahead quietly when the sandbox can run', async () => {
    const { io, said, asked } = gate(present, { interactive: false });
    await expect(ensureSandbox(defaultSandboxPolicy, io)).resolves.toBe(defaultSandboxPolicy);
    expect([...said, ...asked]).toEqual([]);
  });

  it('says --no-sandbox in one line every time, and asks nothing', async () => {
    const { io, said, asked } = gate(missing, { interactive: true });
    const off = { ...defaultSandboxPolicy, enabled: false };
    await expect(ensureSandbox(off, io)).resolves.toBe(off);
    expect(said).toEqual([UNSANDBOXED_LINE]);
    expect(asked).toEqual([]);
  });

  it('refuses unattended, naming the problem, the fix and --no-sandbox', async () => {
    const { io, asked } = gate(missing, { interactive: false });
    const refusal = ensureSandbox(defaultSandboxPolicy, io);
    await expect(refusal).rejects.toThrow(/bubblewrap \(bwrap\) not found on PATH/);
    await expect(ensureSandbox(defaultSandboxPolicy, io)).rejects.toThrow(/sudo apt-get install/);
    await expect(ensureSandbox(defaultSandboxPolicy, io)).rejects.toThrow(/--no-sandbox/);
    expect(asked).toEqual([]);
  });

  it('on a terminal asks once; yes runs without the sandbox and says so', async () => {
    const { io, said, asked } = gate(missing, { interactive: true, answer: true });
    const policy = await ensureSandbox(defaultSandboxPolicy, io);
    expect(policy).toEqual({ ...defaultSandboxPolicy, enabled: false });
    expect(asked).toEqual([
      unavailableQuestion(missing as Extract<SandboxAvailability, { available: false }>),
    ]);
    expect(said).toEqual([UNSANDBOXED_LINE]);
  });

  it('on a terminal, no (the default) refuses like unattended', async () => {
    const { io, said } = gate(missing, { interactive: true, answer: false });
    await expect(ensureSandbox(defaultSandboxPolicy, io)).rejects.toThrow(/Nothing was started/);
    expect(said).toEqual([]);
  });
});

describe('the texts', () => {
  const why = missing as Extract<SandboxAvailability, { available: false }>;

  it('asks with the problem, the fix and a default of no', () => {
    expect(unavailableQuestion(why)).toBe(
      'The sandbox cannot run here: bubblewrap (bwrap) not found on PATH. Fix: sudo apt-get install -y bubblewrap socat. Run this task without the sandbox? [y/N]',
    );
  });

  it('refuses in one line, with or without a fix', () => {
    expect(unavailableRefusal(why)).not.toContain('\n');
    expect(unavailableRefusal({ available: false, problem: 'no namespaces' })).toBe(
      'the sandbox cannot run here: no namespaces. You can run again with --no-sandbox to work without it. Nothing was started.',
    );
  });

  it('takes only y or yes as yes', () => {
    expect(['y', 'Y', 'yes', ' YES '].every(isYes)).toBe(true);
    expect(['', 'n', 'no', 'yep', 'sure'].some(isYes)).toBe(false);
  });

  it('describes the policy for -v', () => {
    expect(sandboxLine(defaultSandboxPolicy)).toBe('sandbox: on; workers reach the package registries');
    expect(sandboxLine({ ...defaultSandboxPolicy, enabled: false })).toBe('sandbox: off (--no-sandbox)');
  });
});
