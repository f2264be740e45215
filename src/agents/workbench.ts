/**
 * The workbench: a directory (`<workspace>/.flower/` by default) where a long run leaves what it
 * wants to keep — reusable scripts, long outputs, decision notes, spilled tool results — plus an
 * index of it all that the main-thread agent sees at the start of each new session.
 *
 * Invariants:
 * - The index text placed in a prompt is short on purpose: at most `maxIndexEntries` entries per
 *   category, the rest collapsed to a count and an `ls` hint. INDEX.md on disk lists everything.
 * - Paths shown to the model are relative to the workspace when the workbench is inside it, and
 *   absolute when it is outside (the `--isolate` layout): a subagent in a git worktree has another
 *   cwd, so only an absolute path reaches the shared workbench.
 * - Subagents never see the index (it is not part of their prompt); the coordinator relays paths.
 * - `spill/` is not indexed: spilled tool results are reached through the pointer left in place of
 *   the result, not by browsing.
 * - INDEX.md is for people and quotes what models wrote (file names, a script's first comment), so
 *   it is written through the output sink's `shown`: secrets masked, controls and bidi characters
 *   visible and inert. It keeps the user's umask, like the workbench: it repeats one line of files
 *   that lie beside it with that same mode, so a private index would hide nothing they show.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { shown } from '../output/sink.js';

export interface WorkbenchOptions {
  /** Directory name under the workspace; ignored when `home` is given. */
  dirname?: string;
  /** Entries per category listed in the prompt block (INDEX.md lists all). */
  maxIndexEntries?: number;
  /** Put the workbench here instead of under the workspace (e.g. outside a git repository). */
  home?: string;
}

/** One indexed file: the path as the model should see it, its description and its size in bytes. */
export interface WorkbenchEntry {
  path: string;
  description: string;
  bytes: number;
}

/** How many leading lines are searched for a `# desc:` line (a shebang and an encoding line fit). */
const DESCRIPTION_SCAN_LINES = 8;
/** Descriptions longer than this are cut: the index is for recognising a file, not explaining it. */
const DESCRIPTION_MAX_CHARS = 100;
/** Outputs longer than this belong in artifacts/ rather than in a chat reply (stated in the rules). */
export const ARTIFACT_THRESHOLD_CHARS = 2000;

const EXPLICIT_DESCRIPTION = /^\s*(?:#|\/\/|--)\s*desc\s*[:：]\s*(.+)$/i;
const COMMENT_LINE = /^(?:#|\/\/|--)/;
const DOCSTRING_LINE = /^(?:"""|''')/;

export class Workbench {
  readonly workspace: string;
  readonly root: string;
  /** True when the workbench lies outside the workspace (paths are then shown absolute). */
  readonly external: boolean;
  readonly scripts: string;
  readonly artifacts: string;
  readonly notes: string;
  readonly spill: string;
  readonly indexPath: string;
  readonly maxIndexEntries: number;

  constructor(workspace: string, options: WorkbenchOptions = {}) {
    this.workspace = resolve(workspace);
    this.root = options.home ? resolve(options.home) : join(this.workspace, options.dirname ?? '.flower');
    this.external = !isInside(this.root, this.workspace);
    this.scripts = join(this.root, 'scripts');
    this.artifacts = join(this.root, 'artifacts');
    this.notes = join(this.root, 'notes');
    this.spill = join(this.root, 'spill');
    this.indexPath = join(this.root, 'INDEX.md');
    this.maxIndexEntries = options.maxIndexEntries ?? 40;
  }

  /**
   * The `--isolate` layout: each worker gets its own git worktree, so the shared workbench must
   * live outside the repository, at `<parent>/.flower-<name>/`. Throws `IsolationError` (before any
   * model call) when the workspace is not inside a git repository, because worktrees need one.
   */
  static isolated(workspace: string, options: Omit<WorkbenchOptions, 'home'> = {}): Workbench {
    const absolute = resolve(workspace);
    requireGitRepository(absolute);
    const home = join(dirname(absolute), `.flower-${basename(absolute)}`);
    return new Workbench(absolute, { ...options, home });
  }

  /** How the model should see `path`: workspace-relative when inside it, absolute otherwise. */
  show(path: string): string {
    const absolute = resolve(this.workspace, path);
    if (this.external || !isInside(absolute, this.workspace)) return absolute;
    return relative(this.workspace, absolute) || '.';
  }

  /** Creates the directories; idempotent. */
  ensure(): this {
    for (const directory of [this.scripts, this.artifacts, this.notes])
      mkdirSync(directory, { recursive: true });
    return this;
  }

  /** Every file under `directory` (recursively, sorted by path, dot-files skipped). */
  scan(directory: string): WorkbenchEntry[] {
    return listFiles(directory).map((file) => ({
      path: this.show(file),
      description: describeFile(file),
      bytes: statSync(file).size,
    }));
  }

  /** Rewrites INDEX.md from what is on disk and returns its text (as written: shown). */
  refresh(): string {
    this.ensure();
    const lines = [
      '# Workbench index',
      '',
      '> Generated automatically; edits are overwritten. A script whose first line is `# desc: <one sentence>` is described here.',
      '',
    ];
    for (const { title, directory } of this.categories()) {
      const entries = this.scan(directory);
      lines.push(`## ${title} (${entries.length})`);
      if (entries.length === 0) lines.push('- (none)');
      for (const entry of entries) lines.push(formatEntry(entry, '(no description)'));
      lines.push('');
    }
    const text = shown(lines.join('\n'));
    // 0o666 less the umask, as before: see the module's header for why the index is not private.
    writeFileSync(this.indexPath, text, { mode: 0o666 });
    return text;
  }

  /**
   * The short workbench section for the first user message of a new session: what already exists
   * (to reuse, not rewrite) and the three conventions for what to put where.
   */
  promptBlock(): string {
    this.ensure();
    const lines = [`# Workbench ${this.show(this.root)}/`, ''];
    if (this.external) {
      lines.push(
        'The workbench is deliberately outside the repository so every worktree shares it; always use these absolute paths.',
        '',
      );
    }
    lines.push('What already exists here — use it before writing anything new:');
    let anything = false;
    for (const { title, directory } of this.categories()) {
      const entries = this.scan(directory);
      if (entries.length === 0) continue;
      anything = true;
      lines.push('', `${title}:`);
      for (const entry of entries.slice(0, this.maxIndexEntries)) lines.push(formatEntry(entry, ''));
      const hidden = entries.length - this.maxIndexEntries;
      if (hidden > 0) lines.push(`- … and ${hidden} more: \`ls ${this.show(directory)}/\``);
    }
    if (!anything) lines.push('(empty so far)');
    lines.push(
      '',
      'Conventions:',
      `1. A script you will run more than once goes in \`${this.show(this.scripts)}/\`, its first line \`# desc: <one sentence>\`.`,
      `2. Output longer than ${ARTIFACT_THRESHOLD_CHARS} characters goes in \`${this.show(this.artifacts)}/\`; the chat gets only its path and the conclusion.`,
      `3. Each key decision goes in its own file under \`${this.show(this.notes)}/\`.`,
    );
    return lines.join('\n');
  }

  /** True when `path` (absolute, or relative to the workspace) lies inside the workbench. */
  contains(path: string): boolean {
    return isInside(resolve(this.workspace, path), this.root);
  }

  private categories(): { title: string; directory: string }[] {
    return [
      { title: 'Reusable scripts', directory: this.scripts },
      { title: 'Artifacts', directory: this.artifacts },
      { title: 'Notes', directory: this.notes },
    ];
  }
}

/** Thrown when `--isolate` is asked for somewhere git worktrees cannot be made. */
export class IsolationError extends Error {
  override name = 'IsolationError';
}

/** Throws `IsolationError` with directions unless `workspace` is inside a git work tree. */
export function requireGitRepository(workspace: string): void {
  let inside = false;
  try {
    inside =
      execFileSync('git', ['rev-parse', '--is-inside-work-tree'], {
        cwd: workspace,
        stdio: ['ignore', 'pipe', 'ignore'],
      })
        .toString()
        .trim() === 'true';
  } catch {
    inside = false;
  }
  if (!inside) {
    throw new IsolationError(
      `--isolate needs ${workspace} to be a git repository (each worker gets its own git worktree). ` +
        'Run `git init` there and commit once, or drop --isolate.',
    );
  }
}

/**
 * A file's one-line description: an explicit `# desc:` (or `// desc:`, `-- desc:`) line among the
 * first lines wins; otherwise the first meaningful comment or docstring line; otherwise "".
 * A shebang is skipped — "!/usr/bin/env node" describes nothing. Shown (secrets masked, controls
 * inert): it goes into INDEX.md and into the prompt's workbench section.
 */
export function describeText(text: string): string {
  const head = text.split(/\r?\n/, DESCRIPTION_SCAN_LINES);
  for (const line of head) {
    const match = EXPLICIT_DESCRIPTION.exec(line);
    if (match?.[1]) return truncate(match[1].trim());
  }
  for (const raw of head) {
    const line = raw.trim();
    if (line.startsWith('#!')) continue;
    if (COMMENT_LINE.test(line) && line.length > 3) return truncate(line.replace(/^[#/\-\s]+/, ''));
    if (DOCSTRING_LINE.test(line)) {
      const body = line.replace(/^["'\s]+|["'\s]+$/g, '');
      if (body) return truncate(body);
    }
  }
  return '';
}

/** Byte size for humans, 1024-based: `512B`, `1.5K`, `2.0M`. */
export function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}K`;
  return `${(bytes / (1024 * 1024)).toFixed(1)}M`;
}

function describeFile(file: string): string {
  try {
    return describeText(readFileSync(file, 'utf8'));
  } catch {
    return '';
  }
}

function formatEntry(entry: WorkbenchEntry, missing: string): string {
  const description = entry.description || missing;
  return `- \`${entry.path}\`${description ? ` — ${description}` : ''} (${humanSize(entry.bytes)})`;
}

/** What of a description line is shown before the cut: any token that starts in what is kept. */
const DESCRIPTION_SHOWN_CHARS = 1000;

/**
 * Cut to `DESCRIPTION_MAX_CHARS` after it is shown: a token cut first would no longer have the
 * shape the mask recognises, and its first part would stay in clear. (Only the line's start is
 * shown: a minified file's first line can be megabytes long.)
 */
function truncate(text: string): string {
  return Array.from(shown(text.slice(0, DESCRIPTION_SHOWN_CHARS)))
    .slice(0, DESCRIPTION_MAX_CHARS)
    .join('');
}

function listFiles(directory: string): string[] {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return [];
  }
  const files: string[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const path = join(directory, name);
    const stats = statSync(path, { throwIfNoEntry: false });
    if (stats?.isDirectory()) files.push(...listFiles(path));
    else if (stats?.isFile()) files.push(path);
  }
  return files;
}

/** True when `path` is `root` or below it (both absolute). */
export function isInside(path: string, root: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot === '' || (!fromRoot.startsWith(`..${sep}`) && fromRoot !== '..' && !isAbsolute(fromRoot));
}
