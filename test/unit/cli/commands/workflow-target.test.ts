import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  isWorkflow,
  loadWorkflow,
  parseTarget,
  TargetError,
  TargetLoadError,
} from '../../../../src/cli/commands/workflow-target.js';

describe('parseTarget', () => {
  it('splits file and module targets at the last colon', () => {
    expect(parseTarget('./examples/my-flow.ts:main')).toEqual({
      module: './examples/my-flow.ts',
      exportName: 'main',
      isFile: true,
    });
    expect(parseTarget('my-package/flows:build')).toEqual({
      module: 'my-package/flows',
      exportName: 'build',
      isFile: false,
    });
    expect(parseTarget('flows.js:main').isFile).toBe(true);
    expect(parseTarget('/abs/flow.mjs:main').isFile).toBe(true);
  });

  it.each([
    ['flows', /needs the form <file-or-module>:<export>/],
    [':main', /names no file or module/],
    ['./flow.ts:', /names no export/],
    ['./flow.ts:not-a-name', /is not an export name/],
  ])('rejects %s with a message that shows the right form', (target, message) => {
    expect(() => parseTarget(target)).toThrow(TargetError);
    expect(() => parseTarget(target)).toThrow(message);
  });
});

describe('isWorkflow', () => {
  it('recognises a workflow by shape', () => {
    expect(isWorkflow({ steps: [], run: () => undefined })).toBe(true);
    expect(isWorkflow({ steps: [] })).toBe(false);
    expect(isWorkflow(null)).toBe(false);
  });
});

describe('loadWorkflow', () => {
  /** Where `flower run` would run the workflow (from -w / -r). */
  const at = { workspace: '/work/space', runDir: '/work/space/state' };
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'flower-target-'));
    const workflow = '{ steps: [], run: async () => ({}) }';
    writeFileSync(
      join(dir, 'flows.mjs'),
      [
        `export const ready = ${workflow};`,
        `export function build() { return ${workflow}; }`,
        `export async function later() { return ${workflow}; }`,
        "export const notAFlow = { name: 'x' };",
        `export function placed(location) { return { ...${workflow}, location }; }`,
        "export function broken() { throw new Error('no brief yet'); }",
      ].join('\n'),
    );
    writeFileSync(join(dir, 'syntax.mjs'), 'export const = ;');
    // An installed package, resolved by name from the directory like any import.
    const pkg = join(dir, 'node_modules', 'my-flows');
    mkdirSync(join(pkg, 'lib'), { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({
        name: 'my-flows',
        type: 'module',
        exports: { '.': './index.js', './nightly': './lib/nightly.js' },
      }),
    );
    writeFileSync(join(pkg, 'index.js'), `export const main = ${workflow};`);
    writeFileSync(join(pkg, 'lib', 'nightly.js'), `export function build() { return ${workflow}; }`);
  });

  it('imports a workflow from an installed package by name, and from its subpath exports', async () => {
    expect(isWorkflow(await loadWorkflow('my-flows:main', at, dir))).toBe(true);
    expect(isWorkflow(await loadWorkflow('my-flows/nightly:build', at, dir))).toBe(true);
  });

  it('takes an exported workflow as it is', async () => {
    expect(isWorkflow(await loadWorkflow('./flows.mjs:ready', at, dir))).toBe(true);
  });

  it('calls an exported function, sync or async, for the workflow', async () => {
    expect(isWorkflow(await loadWorkflow('./flows.mjs:build', at, dir))).toBe(true);
    expect(isWorkflow(await loadWorkflow(`${join(dir, 'flows.mjs')}:later`, at, '/'))).toBe(true);
  });

  it('hands a factory the resolved workspace and run directory', async () => {
    const flow = (await loadWorkflow('./flows.mjs:placed', at, dir)) as unknown as { location: unknown };
    expect(flow.location).toEqual(at);
  });

  it('says where it looked when the file is missing', async () => {
    await expect(loadWorkflow('./nope.ts:main', at, dir)).rejects.toThrow(
      `Cannot find ${join(dir, 'nope.ts')} (current directory ${dir})`,
    );
  });

  it('lists the exports when the named one is missing', async () => {
    await expect(loadWorkflow('./flows.mjs:main', at, dir)).rejects.toThrow(
      '"./flows.mjs" has no export "main" (it exports: broken, build, later, notAFlow, placed, ready).',
    );
  });

  it('refuses an export that is not a workflow', async () => {
    await expect(loadWorkflow('./flows.mjs:notAFlow', at, dir)).rejects.toThrow(
      /is an object with keys name, not a Workflow/,
    );
  });

  it('reports a factory that throws in one line', async () => {
    await expect(loadWorkflow('./flows.mjs:broken', at, dir)).rejects.toThrow(
      /broken\(\) failed while building the workflow: no brief yet/,
    );
  });

  it('reports a module that cannot be imported: a missing one is a usage error, broken code is not', async () => {
    const missing = loadWorkflow('no-such-package-for-flower:main', at, dir);
    await expect(missing).rejects.toThrow(/Importing "no-such-package-for-flower" failed/);
    await expect(missing).rejects.toBeInstanceOf(TargetError);
    const broken = loadWorkflow('./syntax.mjs:main', at, dir);
    await expect(broken).rejects.toThrow(/Importing "\.\/syntax\.mjs" failed/);
    await expect(broken).rejects.toBeInstanceOf(TargetLoadError);
  });
});
