/**
 * A deterministic long-run transcript for the store benchmark: Claude Code's entry shapes (one
 * entry per content block, parentUuid chain, tool results in user entries with the harness's
 * `toolUseResult` copy) in the mix a multi-hour run produces — frequent `git status`/`ls`
 * glances, builds and test runs with long logs, large file reads, edits, denied calls, synthetic
 * API-error turns after a network drop, and bookkeeping entries of other types.
 *
 * `generateTranscript({ entries, seed })` returns an array of plain entry objects; the same seed
 * always gives the same transcript.
 */

/** mulberry32: a tiny seeded PRNG, so runs are comparable (the realistic generator's too). */
export function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'the build step parser token value module error warning test passed failed src lib index config cache worker queue result handler request response'.split(
    ' ',
  );
const GLANCES = [
  'git status',
  'git status --short',
  'ls -la',
  'git diff --stat',
  'git log --oneline -10',
  'ps aux | grep node',
  'pwd',
];
const HEAVY = ['npm run build', 'npm test', 'make -j4', 'cargo build --release', 'pytest -q'];

export function generateTranscript({ entries: target = 20_000, seed = 42 } = {}) {
  const next = random(seed);
  const pick = (list) => list[Math.floor(next() * list.length)];
  const between = (low, high) => low + Math.floor(next() * (high - low));
  const words = (count) => Array.from({ length: count }, () => pick(WORDS)).join(' ');
  // Lines come from a pool so generating ~50 MB takes a moment, not a minute.
  const pool = Array.from({ length: 4096 }, () => words(between(3, 9)));
  const lines = (count) =>
    Array.from(
      { length: count },
      (_, index) => `${String(index + 1).padStart(5)}  ${pool[Math.floor(next() * pool.length)]}`,
    ).join('\n');

  const sessionId = '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b';
  const out = [];
  let counter = 0;
  let parent = null;
  let clock = Date.UTC(2026, 0, 1, 8);
  const uuid = () => {
    counter += 1;
    const hex = counter.toString(16).padStart(12, '0');
    return `00000000-0000-4000-8000-${hex}`;
  };
  const base = () => {
    clock += between(200, 4000);
    return {
      parentUuid: parent,
      isSidechain: false,
      userType: 'external',
      cwd: '/home/dev/project',
      sessionId,
      version: '2.1.332',
      gitBranch: 'main',
      timestamp: new Date(clock).toISOString(),
    };
  };
  const push = (entry) => {
    out.push(entry);
    if (entry.uuid) parent = entry.uuid;
  };
  const usage = () => ({
    input_tokens: between(5, 400),
    cache_creation_input_tokens: between(0, 3000),
    cache_read_input_tokens: between(20_000, 150_000),
    output_tokens: between(20, 900),
  });
  const assistant = (block) =>
    push({
      ...base(),
      type: 'assistant',
      uuid: uuid(),
      requestId: `req_${counter}`,
      message: {
        id: `msg_${counter}`,
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [block],
        stop_reason: block.type === 'tool_use' ? 'tool_use' : 'end_turn',
        stop_sequence: null,
        usage: usage(),
      },
    });
  const toolCall = (name, input, output, extra = {}) => {
    const id = `toolu_${counter.toString(36).padStart(20, '0')}`;
    assistant({ type: 'tool_use', id, name, input });
    push({
      ...base(),
      type: 'user',
      uuid: uuid(),
      message: {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: id,
            content: output,
            ...(extra.isError ? { is_error: true } : {}),
          },
        ],
      },
      toolUseResult:
        name === 'Bash'
          ? { stdout: output, stderr: '', interrupted: false, isImage: false }
          : { type: 'text', file: { filePath: input.file_path, content: output } },
      ...(extra.fields ?? {}),
    });
  };

  push({
    type: 'queue-operation',
    operation: 'enqueue',
    timestamp: new Date(clock).toISOString(),
    sessionId,
    content: 'Port the service to the new API.',
  });
  while (out.length < target) {
    const roll = next();
    if (roll < 0.05) {
      push({
        ...base(),
        type: 'user',
        uuid: uuid(),
        message: { role: 'user', content: `Next: ${words(between(8, 40))}` },
      });
    } else if (roll < 0.17) {
      if (next() < 0.5) assistant({ type: 'thinking', thinking: words(between(30, 200)), signature: 'sig' });
      assistant({ type: 'text', text: words(between(10, 120)) });
    } else if (roll < 0.47) {
      const command = pick(GLANCES);
      const output = command.startsWith('git status')
        ? `On branch main\nChanges not staged for commit:\n${lines(between(2, 15))}`
        : lines(between(3, 25));
      toolCall('Bash', { command, description: 'Look at the current state' }, output);
    } else if (roll < 0.6) {
      const failing = next() < 0.3;
      toolCall('Bash', { command: pick(HEAVY), description: 'Build and test' }, lines(between(50, 220)), {
        isError: failing,
      });
    } else if (roll < 0.78) {
      toolCall(
        'Read',
        { file_path: `/home/dev/project/src/${pick(WORDS)}/${pick(WORDS)}.ts` },
        lines(between(40, 200)),
      );
    } else if (roll < 0.88) {
      toolCall(
        'Edit',
        {
          file_path: `/home/dev/project/src/${pick(WORDS)}.ts`,
          old_string: words(20),
          new_string: words(24),
        },
        'The file has been updated.',
      );
    } else if (roll < 0.93) {
      const command = `${pick(HEAVY)} && git push`;
      toolCall(
        'Bash',
        { command, description: 'Ship it' },
        `Permission to use Bash with command ${command} has been denied. Delegate hands-on work to a subagent.`,
        {
          isError: true,
          fields: { toolDenialKind: 'permission-rule' },
        },
      );
    } else if (roll < 0.96) {
      push({
        ...base(),
        type: 'assistant',
        uuid: uuid(),
        isApiErrorMessage: true,
        error: 'unknown',
        message: {
          id: `msg_${counter}`,
          type: 'message',
          role: 'assistant',
          model: '<synthetic>',
          content: [{ type: 'text', text: 'API Error: Connection error.' }],
          stop_reason: 'stop_sequence',
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      });
      push({ ...base(), type: 'user', uuid: uuid(), message: { role: 'user', content: 'continue' } });
    } else {
      push({
        type: pick(['last-prompt', 'cost-state', 'attachment']),
        sessionId,
        timestamp: new Date(clock).toISOString(),
        detail: words(6),
      });
    }
  }
  return out;
}
