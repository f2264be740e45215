/**
 * Our adversarial campaign (`test/support/glance-campaign.ts`, in the outside campaign's
 * categories): the predicate refuses every command, and each command really does harm when bash
 * runs it in the sandbox — so the corpus tests the predicate, not a strawman.
 */
import { describe, expect, it } from 'vitest';
import { GLANCE_TOOLS } from '../../../src/store/glance/tools.js';
import { isEphemeral } from '../../../src/store/glance.js';
import { CAMPAIGN, CAMPAIGN_COMMANDS } from '../../support/glance-campaign.js';
import { harmDone, runSandboxed, sandboxUnavailable } from '../../support/glance-sandbox.js';

describe('glance predicate: our adversarial campaign', () => {
  it('holds more than 100 commands', () => {
    expect(CAMPAIGN_COMMANDS.length).toBeGreaterThan(100);
  });

  for (const [category, commands] of Object.entries(CAMPAIGN)) {
    it(`refuses every command: ${category}`, () => {
      expect(commands.filter(isEphemeral)).toEqual([]);
    });
  }

  const unavailable = sandboxUnavailable();
  it.skipIf(unavailable !== undefined && !process.env.CI)(
    `every command does harm under real bash (${unavailable ?? 'sandboxed'})`,
    () => {
      const { reports } = runSandboxed(CAMPAIGN_COMMANDS);
      const allowed = new Set([...GLANCE_TOOLS, 'grep']);
      const harmless = reports
        .filter((report) => harmDone(report, allowed).length === 0)
        .map((report) => report.command);
      expect(harmless).toEqual([]);
    },
  );
});
