/**
 * Self-check of `realistic-transcript.mjs` (not a vitest test): `node bench/realistic-transcript.check.mjs
 * [entries] [seed]` generates a session (default 20 000 entries, seed 42) and prints the entries per
 * type, the subagents, the bytes, the largest tool result; it verifies that every `parentUuid` in each
 * file names an earlier entry of the same file (or is null), that uuids are v4 and unique, that every
 * tool_result answers a tool_use of its file, that each Task result names a subagent that exists,
 * that the same seed gives the same session, and that `writeRealisticSession` lays the files out as
 * flower's `sessionFiles` expects. Exit code 1 on any failure.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateRealisticSession, writeRealisticSession } from './realistic-transcript.mjs';

const entries = Number(process.argv[2] ?? 20_000);
const seed = Number(process.argv[3] ?? 42);
const started = performance.now();
const session = generateRealisticSession({ entries, seed });
const generatedMs = performance.now() - started;
const problems = [];
const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const seen = new Set();

function checkFile(name, list, sidechain) {
  const uuids = new Set();
  const toolUses = new Set();
  for (const [index, entry] of list.entries()) {
    if (entry.parentUuid !== undefined && entry.parentUuid !== null && !uuids.has(entry.parentUuid))
      problems.push(`${name}[${index}]: parentUuid ${entry.parentUuid} is not an earlier entry of the file`);
    if (entry.uuid !== undefined) {
      if (!V4.test(entry.uuid)) problems.push(`${name}[${index}]: uuid ${entry.uuid} is not v4`);
      if (seen.has(entry.uuid)) problems.push(`${name}[${index}]: uuid ${entry.uuid} repeats`);
      seen.add(entry.uuid);
      uuids.add(entry.uuid);
      if (entry.isSidechain !== sidechain)
        problems.push(`${name}[${index}]: isSidechain ${entry.isSidechain}`);
    }
    if (entry.type === 'summary' && !uuids.has(entry.leafUuid))
      problems.push(`${name}[${index}]: bad leafUuid`);
    for (const block of Array.isArray(entry.message?.content) ? entry.message.content : []) {
      if (block.type === 'tool_use') toolUses.add(block.id);
      if (block.type === 'tool_result') {
        if (!toolUses.has(block.tool_use_id)) problems.push(`${name}[${index}]: result without a call`);
        if (entry.toolUseResult === undefined) problems.push(`${name}[${index}]: no toolUseResult`);
        if (entry.toolUseResult?.agentId && !session.subagents.has(entry.toolUseResult.agentId))
          problems.push(`${name}[${index}]: Task result names a missing subagent`);
      }
    }
    if (list[0]?.parentUuid !== null && sidechain) problems.push(`${name}: first entry has a parent`);
  }
}

checkFile('main', session.main, false);
for (const [agentId, list] of session.subagents) {
  checkFile(`agent-${agentId}`, list, true);
  if (list.some((entry) => entry.uuid && entry.agentId !== agentId))
    problems.push(`agent-${agentId}: agentId`);
}

const all = [...session.main, ...[...session.subagents.values()].flat()];
const types = {};
for (const entry of all) types[entry.type] = (types[entry.type] ?? 0) + 1;
const bytes = (list) => list.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)) + 1, 0);
let largest = { bytes: 0 };
for (const entry of all) {
  if (!entry.toolUseResult) continue;
  const size = Buffer.byteLength(JSON.stringify(entry));
  if (size > largest.bytes)
    largest = { bytes: size, tool: Object.keys(entry.toolUseResult).join(','), uuid: entry.uuid };
}
const bigResults = all.filter((entry) => entry.toolUseResult && JSON.stringify(entry).length > 50_000).length;
const mainBytes = bytes(session.main);
const subBytes = [...session.subagents.values()].reduce((sum, list) => sum + bytes(list), 0);

const again = generateRealisticSession({ entries, seed });
if (JSON.stringify(again.main) !== JSON.stringify(session.main))
  problems.push('same seed, different main transcript');
if (
  JSON.stringify(generateRealisticSession({ entries: 200, seed: seed + 1 }).main[1]?.uuid) ===
  JSON.stringify(session.main[1]?.uuid)
)
  problems.push('another seed gives the same uuids');

const dir = mkdtempSync(path.join(tmpdir(), 'realistic-check-'));
try {
  writeRealisticSession(dir, '-home-dev-project', session.sessionId, session);
  const project = path.join(dir, 'projects', '-home-dev-project');
  const files = readdirSync(path.join(project, session.sessionId, 'subagents'));
  if (files.filter((name) => name.endsWith('.jsonl')).length !== session.subagents.size)
    problems.push('subagent files missing');
  const lines = readFileSync(path.join(project, `${session.sessionId}.jsonl`), 'utf8')
    .trimEnd()
    .split('\n');
  if (lines.length !== session.main.length) problems.push('main file has the wrong line count');
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  `realistic session: ${entries} entries asked, seed ${seed}, generated in ${Math.round(generatedMs)} ms`,
);
console.log(
  `  entries: ${all.length} (main ${session.main.length}, subagents ${all.length - session.main.length})`,
);
console.log(
  `  per type: ${Object.entries(types)
    .map(([type, count]) => `${type} ${count}`)
    .join(', ')}`,
);
console.log(
  `  subagents: ${session.subagents.size} (entries each ${Math.min(...[...session.subagents.values()].map((l) => l.length))}–${Math.max(...[...session.subagents.values()].map((l) => l.length))})`,
);
console.log(
  `  bytes as JSONL: ${(mainBytes / 1e6).toFixed(1)} MB main + ${(subBytes / 1e6).toFixed(1)} MB subagents`,
);
console.log(
  `  largest tool-result entry: ${(largest.bytes / 1e3).toFixed(0)} KB (toolUseResult keys ${largest.tool}); entries over 50 KB: ${bigResults}`,
);
console.log(
  problems.length
    ? `PROBLEMS (${problems.length}):\n  ${problems.slice(0, 20).join('\n  ')}`
    : 'checks passed: parentUuid chains, v4 uuids, tool results, Task agents, determinism, disk layout',
);
process.exitCode = problems.length ? 1 : 0;
