/**
 * The `.env` chain as a run would load it, in a scratch directory: an exported environment, a
 * project `.env` and a user `.env` (what `flower setup` writes), and no source checkout.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyEnvChain, type EnvChainContext, resolveEnvChain } from '../../src/config/env-chain.js';

export interface EnvFiles {
  /** `<root>/project/.env`, the workspace's. */
  project?: string;
  /** `<root>/home/.config/flower/.env`. */
  user?: string;
}

/** The chain's report for `exported` plus `files` under `root`, and the environment it makes. */
export function envWorld(root: string, exported: Record<string, string>, files: EnvFiles = {}) {
  mkdirSync(join(root, 'project'), { recursive: true });
  if (files.project !== undefined) writeFileSync(join(root, 'project', '.env'), files.project);
  if (files.user !== undefined) {
    mkdirSync(join(root, 'home', '.config', 'flower'), { recursive: true });
    writeFileSync(join(root, 'home', '.config', 'flower', '.env'), files.user);
  }
  const context: EnvChainContext = {
    env: exported,
    cwd: join(root, 'project'),
    home: join(root, 'home'),
    packageRoot: join(root, 'pkg'),
    sourceCheckout: false,
  };
  const report = resolveEnvChain(context);
  const env: Record<string, string | undefined> = { ...exported };
  applyEnvChain(report, env);
  return { report, env };
}
