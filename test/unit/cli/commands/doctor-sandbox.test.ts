import { describe, expect, it } from 'vitest';
import { sandboxSection } from '../../../../src/cli/commands/doctor-sandbox.js';

const base = {
  env: { HOME: '/home/ann', PATH: '/usr/bin' },
  workspace: '/proj',
  runDir: '/proj/runs',
  verbose: false,
  exists: (path: string) => path === '/home/ann/.ssh',
};
const plain = (lines: string[]) => lines.map((line) => line.replace(/\x1b\[[0-9;]*m/g, ''));

describe('sandboxSection', () => {
  it('says which engine runs, what the workers reach, and how many stores are hidden', () => {
    const section = sandboxSection({ ...base, availability: { available: true, engine: 'bubblewrap' } });
    const lines = plain(section.lines);
    expect(lines[0]).toBe('Sandbox: available (bubblewrap)');
    expect(lines[1]).toContain("workers' network: the package registries (default; set FLOWER_NETWORK");
    expect(lines[2]).toMatch(
      /credential stores hidden: \d+ places, 1 present here .*FLOWER_SANDBOX_HIDE; -v lists them/,
    );
    expect(section.warnings).toEqual([]);
  });

  it('names what is missing and the fix, and warns', () => {
    const section = sandboxSection({
      ...base,
      availability: {
        available: false,
        problem: 'socat not found on PATH',
        fix: 'sudo apt-get install -y socat',
      },
    });
    const lines = plain(section.lines);
    expect(lines[0]).toBe('Sandbox: cannot run here: socat not found on PATH');
    expect(lines[1]).toBe('  fix: sudo apt-get install -y socat');
    expect(section.warnings).toEqual([
      'the sandbox cannot run here: socat not found on PATH; fix: sudo apt-get install -y socat',
    ]);
  });

  it('shows FLOWER_NETWORK, and warns about one that does not parse', () => {
    const good = plain(
      sandboxSection({
        ...base,
        env: { ...base.env, FLOWER_NETWORK: 'none' },
        availability: { available: true, engine: 'seatbelt' },
      }).lines,
    );
    expect(good[1]).toContain("workers' network: no network (from FLOWER_NETWORK");
    const bad = sandboxSection({
      ...base,
      env: { ...base.env, FLOWER_NETWORK: 'bogus!' },
      availability: { available: true, engine: 'seatbelt' },
    });
    expect(bad.warnings).toHaveLength(1);
    expect(bad.warnings[0]).toMatch(/FLOWER_NETWORK=bogus!.*`registries`.*--network/);
  });

  it('lists every store with -v, FLOWER_SANDBOX_HIDE included', () => {
    const lines = plain(
      sandboxSection({
        ...base,
        verbose: true,
        env: { ...base.env, FLOWER_SANDBOX_HIDE: '~/vault:/srv/keys' },
        availability: { available: true, engine: 'bubblewrap' },
      }).lines,
    );
    expect(lines[2]).toContain('extended by FLOWER_SANDBOX_HIDE');
    expect(lines).toContain('    ~/.ssh');
    expect(lines).toContain('    ~/vault');
    expect(lines).toContain('    /srv/keys');
    expect(lines).toContain('    /proj/runs');
  });
});
