// Child process for the manifest/lineage e2e tests: exercises the built runtime modules (dist/)
// from a separate Node process, the way parallel flower processes share one run directory.
//
//   node manifest-writer.mjs concurrent <runDir> <workspace> <runId> <writer> <count> <startAt>
//     waits until <startAt> (epoch ms, so all writers start together), bumps the wake counter,
//     then for each i < count: adds step "w<writer>-<i>" to its results and saves all of them
//     (as the run loop does after every step), and records lineage step "step-<writer>-<i>".
//   node manifest-writer.mjs once <runDir> <workspace> <runId>
//     saves one result and one lineage step; warnings go to stderr.
import { Lineage } from '../../dist/runtime/lineage.js';
import { saveManifestRows } from '../../dist/runtime/manifest.js';
import { finishStepResult, newStepResult } from '../../dist/runtime/step-result.js';

const [mode, ...args] = process.argv.slice(2);
const warn = (line) => process.stderr.write(`warning: ${line}\n`);

function finished(step, run) {
  const result = newStepResult(step, run);
  result.ok = true;
  result.sessionId = `session-of-${step}`;
  finishStepResult(result);
  return result;
}

if (mode === 'concurrent') {
  const [runDir, workspace, runId, writer, count, startAt] = args;
  while (Date.now() < Number(startAt)) await new Promise((done) => setTimeout(done, 2));
  const lineage = Lineage.open(runDir, workspace, { onWarning: warn });
  lineage.bump();
  const results = [];
  for (let i = 0; i < Number(count); i += 1) {
    results.push(finished(`w${writer}-${i}`, runId));
    if (!saveManifestRows(runDir, runId, results, { onWarning: warn })) process.exitCode = 1;
    lineage.remember(`step-${writer}-${i}`, `session-${writer}-${i}`);
  }
} else if (mode === 'once') {
  const [runDir, workspace, runId] = args;
  saveManifestRows(runDir, runId, [finished('work', runId)], { onWarning: warn });
  Lineage.open(runDir, workspace, { onWarning: warn }).remember('work', 'session-after-corruption');
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
