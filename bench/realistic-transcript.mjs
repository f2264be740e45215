/**
 * A transcript that looks like a real Claude Code 2.x session, for benches that must not flatter
 * the store with the project's own, tidier generator (`transcript-generator.mjs`).
 *
 * `generateRealisticSession({ entries, subagents, seed, sessionId, cwd })` returns
 * `{ sessionId, main: Entry[], subagents: Map<agentId, Entry[]>, meta: Map<agentId, sidecar> }`:
 * - `entries` (default 20 000) is the total over the main transcript and every subagent's (the
 *   result has at least that many); about 40% of them are in subagents;
 * - `subagents` (default one per 500 entries: 40 at 20k) Task calls, each answered by a sidechain
 *   transcript (`isSidechain: true`, `agentId`, the parent's `sessionId`, its own uuids, first
 *   entry a user prompt with `parentUuid: null`); sometimes two are dispatched in parallel;
 * - `meta`: each subagent's `.meta.json` sidecar as flower reads it (`agentType`, `description`,
 *   `toolUseId`; the SDK turns it into an `agent_metadata` entry in the store).
 * Deterministic per `seed`: the same seed gives the same session, byte for byte.
 *
 * What makes it realistic (the shapes are those of Claude Code 2.x JSONL lines):
 * - random v4 uuids (bytes from a seeded PRNG, version and variant bits set), `msg_01…`,
 *   `toolu_01…`, `req_011C…` ids;
 * - one entry per content block: a response with thinking, text and several tool_use blocks is
 *   several `assistant` entries sharing `message.id` and `requestId`, chained by `parentUuid`;
 *   `stop_reason` is null except on the last block;
 * - every tool result is a `user` entry with a `tool_result` block, `sourceToolAssistantUUID`,
 *   and the harness's per-tool `toolUseResult` copy: Read `{ type: 'text', file: { filePath,
 *   content, numLines, startLine, totalLines } }` (the block holds the `cat -n` numbered text, the
 *   copy the raw text: the file twice), Bash `{ stdout, stderr, interrupted, isImage }`, Edit
 *   `{ filePath, oldString, newString, originalFile, structuredPatch, userModified, replaceAll }`
 *   (the whole original file again), Write `{ type: 'create', filePath, content, structuredPatch }`,
 *   Grep `{ mode, filenames, numFiles }`, Glob `{ filenames, durationMs, numFiles, truncated }`,
 *   TodoWrite `{ oldTodos, newTodos }`, Task `{ status, prompt, agentId, content, totalDurationMs,
 *   totalTokens, totalToolUseCount, usage }`;
 * - a few 50–500 KB results (whole-file reads, long build logs): about one per 4 000 entries, at
 *   least two; a Read's entry holds its text twice (numbered block + copy), so up to ≈ 1.1 MB;
 * - `file-history-snapshot` entries (no uuid) before each prompt, `{ messageId, snapshot: {
 *   messageId, trackedFileBackups: { path: { backupFileName, version, backupTime } }, timestamp },
 *   isSnapshotUpdate }`, and updates after edits;
 * - the odd `system` entry (API retry), `summary` entries (`leafUuid`), denied calls with
 *   `is_error`, user prompts with `thinkingMetadata` and `todos`.
 *
 * `writeRealisticSession(configDir, projectKey, sessionId, session)` writes it as Claude Code lays
 * it out and as flower reads it back (src/store/transcript-recovery.ts `sessionFiles`):
 * `<configDir>/projects/<projectKey>/<sessionId>.jsonl`, and per subagent
 * `<configDir>/projects/<projectKey>/<sessionId>/subagents/agent-<agentId>.jsonl` with its
 * `agent-<agentId>.meta.json` sidecar beside it. Pass the `sessionId` the session was generated
 * with (the entries carry it).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { random } from './transcript-generator.mjs';

const HEX = '0123456789abcdef';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const WORDS = (
  'the build step parser token value module error warning test passed failed src lib index config cache ' +
  'worker queue result handler request response const return await async function export import type ' +
  'interface string number undefined null promise stream buffer schema migration session store entry'
).split(' ');
const DIRS = ['src', 'src/store', 'src/runtime', 'src/cli', 'src/agents', 'test/unit', 'test/e2e', 'lib'];
const GLANCES = ['git status', 'git status --short', 'ls -la', 'git diff --stat', 'git log --oneline -10'];
const HEAVY = ['npm run build', 'npm test', 'npx vitest run test/unit', 'npx tsc --noEmit', 'npm run lint'];
const AGENT_TYPES = ['general-purpose', 'Explore', 'coder', 'tester', 'reviewer'];
const MODEL = 'claude-opus-4-5-20251101';
const SUB_MODEL = 'claude-sonnet-4-5-20250929';
const VERSION = '2.1.14';

export function generateRealisticSession({
  entries: target = 20_000,
  subagents: subagentCount = Math.max(1, Math.round(target / 500)),
  seed = 42,
  sessionId: givenSessionId,
  cwd = '/home/dev/project',
} = {}) {
  const next = random(seed);
  const pick = (list) => list[Math.floor(next() * list.length)];
  const between = (low, high) => low + Math.floor(next() * (high - low));
  const chars = (alphabet, count) => {
    let text = '';
    for (let i = 0; i < count; i++) text += alphabet[Math.floor(next() * alphabet.length)];
    return text;
  };
  const uuid = () => {
    const bytes = Array.from({ length: 16 }, () => Math.floor(next() * 256));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = bytes.map((byte) => byte.toString(16).padStart(2, '0')).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  const words = (count) => Array.from({ length: count }, () => pick(WORDS)).join(' ');
  const pool = Array.from({ length: 4096 }, () => {
    const indent = '  '.repeat(between(0, 4));
    return `${indent}${words(between(2, 10))}${pick([';', '', ',', ' {', '}', ''])}`;
  });
  /** `count` lines of source or log text (raw, no line numbers). */
  const text = (count) => {
    const out = new Array(count);
    for (let i = 0; i < count; i++) out[i] = pool[Math.floor(next() * pool.length)];
    return out.join('\n');
  };
  /** Lines of about `bytes` bytes in total. */
  const textOfBytes = (bytes) => text(Math.max(1, Math.round(bytes / 36)));
  const catN = (content, startLine = 1) =>
    content
      .split('\n')
      .map((line, index) => `${String(index + startLine).padStart(6)}→${line}`)
      .join('\n');
  const filePath = () => `${cwd}/${pick(DIRS)}/${pick(WORDS)}-${pick(WORDS)}.ts`;

  const sessionId = givenSessionId ?? uuid();
  const clock = Date.UTC(2026, 0, 12, 8, between(0, 59));
  const subTarget = Math.floor(target * 0.4);
  const mainTarget = target - subTarget;
  const perSubagent = Math.max(12, Math.floor(subTarget / subagentCount));
  const bigEvery = Math.max(1, Math.floor(target / Math.max(2, Math.round(target / 4000))));
  let produced = 0; // entries so far, over every transcript, for placing the big results
  let nextBigAt = Math.floor(bigEvery / 2);
  const subagents = new Map();
  const meta = new Map();

  /** One transcript (the main one or a sidechain), with its own chain. */
  function transcript({ sidechain, agentId, model, startClock }) {
    const out = [];
    let parent = null;
    let local = startClock;
    const base = () => {
      local += between(150, 5000);
      return {
        parentUuid: parent,
        isSidechain: sidechain,
        userType: 'external',
        cwd,
        sessionId,
        version: VERSION,
        gitBranch: 'main',
        ...(agentId ? { agentId } : {}),
      };
    };
    const stamp = () => new Date(local).toISOString();
    const push = (entry) => {
      out.push(entry);
      produced += 1;
      if (entry.uuid) parent = entry.uuid;
      return entry;
    };
    const usage = () => {
      const creation = between(0, 4000);
      return {
        input_tokens: between(1, 30),
        cache_creation_input_tokens: creation,
        cache_read_input_tokens: between(15_000, 160_000),
        cache_creation: { ephemeral_5m_input_tokens: creation, ephemeral_1h_input_tokens: 0 },
        output_tokens: between(1, 1200),
        service_tier: 'standard',
      };
    };
    /** One API response, written as one entry per block; returns the tool_use entries' uuids. */
    const response = (blocks) => {
      const messageId = `msg_01${chars(BASE62, 22)}`;
      const requestId = `req_011C${chars(BASE62, 20)}`;
      const shared = usage();
      const sources = new Map();
      blocks.forEach((block, index) => {
        const last = index === blocks.length - 1;
        const entry = push({
          ...base(),
          message: {
            model,
            id: messageId,
            type: 'message',
            role: 'assistant',
            content: [block],
            stop_reason: last ? (block.type === 'tool_use' ? 'tool_use' : 'end_turn') : null,
            stop_sequence: null,
            usage: shared,
          },
          requestId,
          type: 'assistant',
          uuid: uuid(),
          timestamp: stamp(),
        });
        if (block.type === 'tool_use') sources.set(block.id, entry.uuid);
      });
      return sources;
    };
    const toolResult = (id, source, content, toolUseResult, isError = false) =>
      push({
        ...base(),
        type: 'user',
        message: {
          role: 'user',
          content: [
            { tool_use_id: id, type: 'tool_result', content, ...(isError ? { is_error: true } : {}) },
          ],
        },
        uuid: uuid(),
        timestamp: stamp(),
        toolUseResult,
        sourceToolAssistantUUID: source,
      });
    const prompt = (content) => {
      const promptUuid = uuid();
      if (!sidechain) {
        push({
          type: 'file-history-snapshot',
          messageId: promptUuid,
          snapshot: { messageId: promptUuid, trackedFileBackups: backups(), timestamp: stamp() },
          isSnapshotUpdate: false,
        });
      }
      return push({
        ...base(),
        type: 'user',
        message: { role: 'user', content },
        uuid: promptUuid,
        timestamp: stamp(),
        ...(sidechain
          ? {}
          : { thinkingMetadata: { level: 'high', disabled: false, triggers: [] }, todos: [] }),
      });
    };
    const tracked = new Map();
    const backups = () =>
      Object.fromEntries(
        [...tracked].map(([file, version]) => [
          file,
          { backupFileName: `${chars(HEX, 16)}@v${version}`, version, backupTime: stamp() },
        ]),
      );
    let lastPrompt = null;

    /** A tool call: [name, input, make(): { content, copy, isError? }]. */
    const big = () => {
      if (produced < nextBigAt) return undefined;
      nextBigAt += bigEvery;
      return Math.round(50_000 * 10 ** (next() * Math.log10(10))); // 50–500 KB, log-uniform
    };
    const calls = {
      Read: () => {
        const file = filePath();
        const size = big();
        const content = size ? textOfBytes(size) : text(between(20, 250));
        const numLines = content.split('\n').length;
        return [
          { file_path: file },
          {
            content: catN(content),
            copy: {
              type: 'text',
              file: { filePath: file, content, numLines, startLine: 1, totalLines: numLines },
            },
          },
        ];
      },
      Bash: () => {
        const heavy = next() < 0.35;
        const command = heavy ? pick(HEAVY) : pick(GLANCES);
        const size = heavy ? big() : undefined;
        const stdout = size ? textOfBytes(size) : heavy ? text(between(20, 250)) : text(between(2, 20));
        const failing = heavy && next() < 0.25;
        const stderr = failing ? text(between(2, 12)) : '';
        return [
          { command, description: heavy ? 'Build and run the tests' : 'Look at the working tree' },
          {
            content: failing ? `Exit code 1\n${stdout}\n${stderr}` : stdout,
            copy: { stdout, stderr, interrupted: false, isImage: false },
            isError: failing,
          },
        ];
      },
      Edit: () => {
        const file = filePath();
        const originalFile = text(between(30, 300));
        const oldString = text(between(1, 6));
        const newString = text(between(1, 8));
        const start = between(1, 200);
        tracked.set(file, (tracked.get(file) ?? 0) + 1);
        return [
          { file_path: file, old_string: oldString, new_string: newString },
          {
            content: `The file ${file} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n${catN(text(12), start)}`,
            copy: {
              filePath: file,
              oldString,
              newString,
              originalFile,
              structuredPatch: [
                {
                  oldStart: start,
                  oldLines: oldString.split('\n').length + 6,
                  newStart: start,
                  newLines: newString.split('\n').length + 6,
                  lines: [
                    ...text(3)
                      .split('\n')
                      .map((line) => ` ${line}`),
                    ...oldString.split('\n').map((line) => `-${line}`),
                    ...newString.split('\n').map((line) => `+${line}`),
                    ...text(3)
                      .split('\n')
                      .map((line) => ` ${line}`),
                  ],
                },
              ],
              userModified: false,
              replaceAll: false,
            },
          },
        ];
      },
      Write: () => {
        const file = filePath();
        const content = text(between(20, 200));
        tracked.set(file, (tracked.get(file) ?? 0) + 1);
        return [
          { file_path: file, content },
          {
            content: `File created successfully at: ${file}`,
            copy: { type: 'create', filePath: file, content, structuredPatch: [] },
          },
        ];
      },
      Grep: () => {
        const filenames = Array.from({ length: between(0, 25) }, filePath);
        return [
          { pattern: pick(WORDS), path: cwd, output_mode: 'files_with_matches' },
          {
            content: filenames.length
              ? `Found ${filenames.length} files\n${filenames.join('\n')}`
              : 'No files found',
            copy: { mode: 'files_with_matches', filenames, numFiles: filenames.length },
          },
        ];
      },
      Glob: () => {
        const filenames = Array.from({ length: between(1, 60) }, filePath);
        return [
          { pattern: `**/*${pick(WORDS)}*.ts` },
          {
            content: filenames.join('\n'),
            copy: { filenames, durationMs: between(3, 90), numFiles: filenames.length, truncated: false },
          },
        ];
      },
      TodoWrite: () => {
        const todo = () => ({
          content: words(between(3, 9)),
          status: pick(['pending', 'in_progress', 'completed']),
          activeForm: words(between(3, 9)),
        });
        const newTodos = Array.from({ length: between(2, 8) }, todo);
        return [
          { todos: newTodos },
          {
            content:
              'Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable',
            copy: { oldTodos: newTodos.slice(1), newTodos },
          },
        ];
      },
    };
    const mix = [
      ['Bash', 0.34],
      ['Read', 0.26],
      ['Edit', 0.14],
      ['Grep', 0.08],
      ['Glob', 0.05],
      ['Write', 0.05],
      ['TodoWrite', 0.08],
    ];
    const pickTool = () => {
      let roll = next();
      for (const [name, weight] of mix) {
        roll -= weight;
        if (roll < 0) return name;
      }
      return 'Bash';
    };

    /** One turn of work: an optional thinking/text lead-in, then 1–3 parallel tool calls and results. */
    const workTurn = () => {
      const lead = [];
      if (next() < 0.45)
        lead.push({ type: 'thinking', thinking: words(between(20, 300)), signature: chars(BASE62, 300) });
      if (next() < 0.6) lead.push({ type: 'text', text: words(between(5, 80)) });
      const planned = Array.from({ length: next() < 0.75 ? 1 : between(2, 4) }, () => {
        const name = pickTool();
        const id = `toolu_01${chars(BASE62, 22)}`;
        const [input, result] = calls[name]();
        return { name, id, input, result };
      });
      const sources = response([
        ...lead,
        ...planned.map(({ name, id, input }) => ({ type: 'tool_use', id, name, input })),
      ]);
      for (const { id, input, result, name } of planned) {
        if (!sidechain && name === 'Bash' && next() < 0.04) {
          const denial = `Permission to use Bash with command ${input.command} has been denied.`;
          toolResult(id, sources.get(id), denial, `Error: ${denial}`, true);
          continue;
        }
        toolResult(id, sources.get(id), result.content, result.copy, result.isError);
        if (!sidechain && (name === 'Edit' || name === 'Write') && lastPrompt) {
          push({
            type: 'file-history-snapshot',
            messageId: lastPrompt,
            snapshot: { messageId: lastPrompt, trackedFileBackups: backups(), timestamp: stamp() },
            isSnapshotUpdate: true,
          });
        }
      }
    };

    return {
      out,
      clock: () => local,
      setClock: (value) => {
        local = Math.max(local, value);
      },
      prompt: (content) => {
        lastPrompt = prompt(content).uuid;
      },
      workTurn,
      say: () => response([{ type: 'text', text: words(between(10, 150)) }]),
      retry: () =>
        push({
          ...base(),
          type: 'system',
          subtype: 'api_error',
          level: 'error',
          error: { status: 529, error: { type: 'overloaded_error', message: 'Overloaded' } },
          retryInMs: between(500, 8000),
          retryAttempt: between(1, 4),
          maxRetries: 10,
          uuid: uuid(),
          timestamp: stamp(),
        }),
      summary: () => parent && push({ type: 'summary', summary: words(between(4, 10)), leafUuid: parent }),
      response,
      toolResult,
    };
  }

  function runSubagent(agentId, promptText, startClock, budget) {
    const sub = transcript({ sidechain: true, agentId, model: SUB_MODEL, startClock });
    sub.prompt(promptText);
    while (sub.out.length < budget - 2) sub.workTurn();
    sub.say();
    subagents.set(agentId, sub.out);
    const tokens = sub.out.reduce((sum, entry) => sum + (entry.message?.usage?.output_tokens ?? 0), 0);
    return { end: sub.clock(), tokens, toolUses: sub.out.filter((entry) => entry.toolUseResult).length };
  }

  const main = transcript({ sidechain: false, model: MODEL, startClock: clock });
  main.prompt(words(between(20, 120)));
  const dispatchEvery = Math.max(8, Math.floor(mainTarget / (subagentCount + 1)));
  let nextDispatch = dispatchEvery;
  let dispatched = 0;
  while (main.out.length < mainTarget || dispatched < subagentCount) {
    if (main.out.length >= nextDispatch && dispatched < subagentCount) {
      nextDispatch += dispatchEvery;
      const parallel = Math.min(subagentCount - dispatched, next() < 0.3 ? 2 : 1);
      const tasks = Array.from({ length: parallel }, () => ({
        id: `toolu_01${chars(BASE62, 22)}`,
        agentId: `a${chars(HEX, 16)}`,
        agentType: pick(AGENT_TYPES),
        description: words(between(3, 6)),
        prompt: words(between(40, 400)),
      }));
      const sources = main.response([
        { type: 'text', text: words(between(5, 40)) },
        ...tasks.map((task) => ({
          type: 'tool_use',
          id: task.id,
          name: 'Task',
          input: { description: task.description, prompt: task.prompt, subagent_type: task.agentType },
        })),
      ]);
      const start = main.clock();
      let end = start;
      for (const task of tasks) {
        const run = runSubagent(task.agentId, task.prompt, start, perSubagent);
        end = Math.max(end, run.end);
        meta.set(task.agentId, {
          agentType: task.agentType,
          description: task.description,
          toolUseId: task.id,
        });
        const report = words(between(60, 600));
        main.setClock(end);
        main.toolResult(task.id, sources.get(task.id), [{ type: 'text', text: report }], {
          status: 'completed',
          prompt: task.prompt,
          agentId: task.agentId,
          content: [{ type: 'text', text: report }],
          totalDurationMs: run.end - start,
          totalTokens: run.tokens + between(20_000, 90_000),
          totalToolUseCount: run.toolUses,
          usage: {
            input_tokens: between(1, 30),
            cache_creation_input_tokens: between(0, 4000),
            cache_read_input_tokens: between(15_000, 90_000),
            output_tokens: between(100, 2000),
            service_tier: 'standard',
          },
        });
      }
      dispatched += parallel;
      continue;
    }
    const roll = next();
    if (roll < 0.04) main.prompt(words(between(5, 80)));
    else if (roll < 0.12) main.say();
    else if (roll < 0.125) main.retry();
    else if (roll < 0.128) main.summary();
    else main.workTurn();
  }
  return { sessionId, main: main.out, subagents, meta };
}

const jsonl = (entries) => entries.map((entry) => `${JSON.stringify(entry)}\n`).join('');

/** Write `session` as Claude Code lays it out under `configDir` (see the header). Returns the main file. */
export function writeRealisticSession(configDir, projectKey, sessionId, session) {
  const project = path.join(configDir, 'projects', projectKey);
  const subagentsDir = path.join(project, sessionId, 'subagents');
  mkdirSync(subagentsDir, { recursive: true });
  const mainFile = path.join(project, `${sessionId}.jsonl`);
  writeFileSync(mainFile, jsonl(session.main));
  for (const [agentId, entries] of session.subagents) {
    writeFileSync(path.join(subagentsDir, `agent-${agentId}.jsonl`), jsonl(entries));
    const sidecar = session.meta?.get(agentId);
    if (sidecar)
      writeFileSync(path.join(subagentsDir, `agent-${agentId}.meta.json`), JSON.stringify(sidecar));
  }
  return mainFile;
}
