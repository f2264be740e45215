/**
 * Hand-built transcripts shaped like the ones Claude Code writes: one entry per content block,
 * each linked to the previous by `parentUuid`, tool results in `user` entries, denials marked
 * with `toolDenialKind`, network failures as `<synthetic>` assistant turns. Ids are deterministic
 * so tests and generated cases are reproducible.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';

export type Entry = SessionStoreEntry;

export interface ToolCallOptions {
  /** The result as a block list (e.g. with an image) instead of a string. */
  blocks?: unknown[];
  isError?: boolean;
}

export class TranscriptBuilder {
  readonly entries: Entry[] = [];
  private counter = 0;
  private parent: string | null = null;
  private readonly sessionId: string;

  constructor(
    readonly prefix = 't',
    sessionId = '11111111-2222-4333-8444-555555555555',
  ) {
    this.sessionId = sessionId;
  }

  private nextId(kind: string): string {
    this.counter += 1;
    return `${this.prefix}-${kind}-${this.counter}`;
  }

  /** Append an entry linked to the previous one; returns it. */
  push(fields: Record<string, unknown>): Entry {
    const uuid = this.nextId('e');
    const entry: Entry = {
      type: 'user',
      uuid,
      parentUuid: this.parent,
      sessionId: this.sessionId,
      cwd: '/work/project',
      timestamp: new Date(Date.UTC(2026, 0, 1) + this.counter * 1000).toISOString(),
      ...fields,
    };
    this.entries.push(entry);
    this.parent = uuid;
    return entry;
  }

  prompt(text: string): Entry {
    return this.push({ type: 'user', message: { role: 'user', content: text } });
  }

  private assistant(block: Record<string, unknown>, extra: Record<string, unknown> = {}): Entry {
    return this.push({
      type: 'assistant',
      message: {
        id: this.nextId('msg'),
        role: 'assistant',
        model: 'claude-test',
        content: [block],
        stop_reason: block.type === 'tool_use' ? 'tool_use' : 'end_turn',
        usage: {
          input_tokens: 100,
          cache_read_input_tokens: 2000,
          cache_creation_input_tokens: 50,
          output_tokens: 20,
        },
      },
      ...extra,
    });
  }

  say(text: string): Entry {
    return this.assistant({ type: 'text', text });
  }

  /**
   * One API response written the way the harness writes it: one entry per content block, every
   * entry carrying the same `message.id` and the same `usage`. Returns the entries.
   */
  response(
    blocks: Array<Record<string, unknown>>,
    options: { usage?: Record<string, unknown>; model?: string; id?: string } = {},
  ): Entry[] {
    const id = options.id ?? this.nextId('msg');
    const usage = options.usage ?? {
      input_tokens: 100,
      cache_read_input_tokens: 2000,
      cache_creation_input_tokens: 50,
      output_tokens: 20,
    };
    return blocks.map((block) =>
      this.push({
        type: 'assistant',
        message: {
          id,
          role: 'assistant',
          model: options.model ?? 'claude-test',
          content: [block],
          stop_reason: block.type === 'tool_use' ? 'tool_use' : 'end_turn',
          usage,
        },
      }),
    );
  }

  /** A tool_use block for `response`, with a fresh id (read it back from `.id`). */
  toolUseBlock(
    name: string,
    input: Record<string, unknown>,
  ): { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> } {
    return { type: 'tool_use', id: this.nextId('toolu'), name, input };
  }

  /** An assistant tool_use entry; returns the tool_use id. */
  call(name: string, input: Record<string, unknown>): string {
    const id = this.nextId('toolu');
    this.assistant({ type: 'tool_use', id, name, input });
    return id;
  }

  /** The user entry answering `toolUseId`. */
  result(
    toolUseId: string,
    output: string,
    options: ToolCallOptions & { extra?: Record<string, unknown> } = {},
  ): Entry {
    return this.push({
      type: 'user',
      message: {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: toolUseId,
            content: options.blocks ?? output,
            ...(options.isError ? { is_error: true } : {}),
          },
        ],
      },
      toolUseResult: { stdout: output, stderr: '', interrupted: false },
      ...options.extra,
    });
  }

  tool(name: string, input: Record<string, unknown>, output: string, options: ToolCallOptions = {}): string {
    const id = this.call(name, input);
    this.result(id, output, options);
    return id;
  }

  bash(command: string, output: string): string {
    return this.tool('Bash', { command }, output);
  }

  /** A call a permission rule (a hook) refused: it never ran. */
  denied(command: string): string {
    const id = this.call('Bash', { command });
    this.result(id, `Permission to use Bash with command ${command} has been denied.`, {
      isError: true,
      extra: { toolDenialKind: 'permission-rule' },
    });
    return id;
  }

  /** A call cut off by the user; its result says so and is an error. */
  interrupted(command: string): string {
    const id = this.call('Bash', { command });
    this.result(id, '[Request interrupted by user for tool use]', { isError: true });
    return id;
  }

  /** A tool call whose result never arrived (the connection dropped). */
  orphan(command: string): string {
    return this.call('Bash', { command });
  }

  /**
   * The harness's stand-in turn when the API could not be reached. It carries two marks, the
   * `isApiErrorMessage` flag and the model `<synthetic>`; `marks` leaves one of them out.
   */
  apiError(text = 'API Error: Connection error.', marks: 'both' | 'flag' | 'model' = 'both'): Entry {
    return this.push({
      type: 'assistant',
      ...(marks === 'model' ? {} : { isApiErrorMessage: true }),
      message: {
        id: this.nextId('msg'),
        role: 'assistant',
        model: marks === 'flag' ? 'claude-test' : '<synthetic>',
        content: [{ type: 'text', text }],
        stop_reason: 'stop_sequence',
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
  }

  compactSummary(text: string): Entry {
    return this.push({ type: 'user', isCompactSummary: true, message: { role: 'user', content: text } });
  }

  meta(text: string): Entry {
    return this.push({ type: 'user', isMeta: true, message: { role: 'user', content: text } });
  }

  /** A chained entry without a message (the harness links `attachment` entries into the chain). */
  attachment(detail: string): Entry {
    return this.push({ type: 'attachment', attachment: { type: 'todo_reminder', content: detail } });
  }

  /** A bookkeeping entry of a type the layers know nothing about (no uuid, no chain). */
  marker(type: string, fields: Record<string, unknown> = {}): Entry {
    const entry: Entry = { type, sessionId: this.sessionId, ...fields };
    this.entries.push(entry);
    return entry;
  }
}
