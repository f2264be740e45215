/**
 * The command line as bash will run it: simple commands, their words after quote removal, and their
 * redirections — for the small part of bash's syntax a glance may use. Everything else is refused.
 *
 * Why a tokenizer of our own and not a parser from npm (evaluated 2026-12, Node 20):
 * - `sh-syntax` (mvdan/sh as Go WebAssembly) is async only, starts a fresh Go instance per call
 *   (~8 ms a parse here), and its JSON tree carries no node types, so a walker cannot tell a
 *   parameter expansion from a literal.
 * - `mvdan-sh` (the same parser through GopherJS) is exact and synchronous, but unmaintained since
 *   2022 (its author points to `sh-syntax`), 1.5 MB, and 70 ms to load.
 * - `tree-sitter-bash` + `web-tree-sitter` needs an async start and is not bash: it attached
 *   `2>/dev/null` to a whole `a && b | c` list instead of `c`, and parsed `$"…"` as a plain string.
 * - `bash-parser` was last released in 2017.
 * None of them expands braces, globs or tildes either (they stay inside literal nodes), so every one
 * would still need the character rules below. A glance needs only a tiny subset of bash, so this
 * module recognises exactly that subset — and nothing that merely resembles it.
 *
 * Invariants (each follows bash 5's own rules; the property test checks them against real bash):
 * - A word is built from unquoted literal characters, `'…'`, `"…"` and `\c`; quote removal gives
 *   its text exactly as the program receives it. Inside `"…"` a backslash escapes only `$`, a
 *   backtick, `"`, `\` and a newline, as in bash; `\<newline>` is a line continuation everywhere.
 * - Refused wherever they would act (the whole command line is then not understood): `$` outside
 *   single quotes (parameters, `$(…)`, `$((…))`, `$'…'`, `$"…"`), backticks, `{` and `}` (brace
 *   expansion and groups), `!` outside single quotes (history, negation), `(` and `)` (subshells,
 *   process substitution, extglob), `#` at the start of a word (a comment hides text), `~` where
 *   bash would expand it (start of a word, after `=` or `:`), control characters, `&` on its own
 *   (background), `|&`, `;;`, input redirections and here-documents, and unterminated quotes.
 * - Unquoted `*`, `?` and `[` are kept in the word and recorded: the caller decides where a
 *   pattern may stand (bash replaces it with file names).
 * - Commands are separated by `&&`, `||`, `;`, `|` or a newline, and none may be empty.
 * - Output redirections are returned with their parsed target word, never judged on raw text: in
 *   `>/dev/null'x'` the target is `/dev/nullx`.
 */

export interface Word {
  /** The text after quote removal: what the program receives when no pattern expansion happens. */
  readonly text: string;
  /** Positions in `text` of unquoted `*`, `?` and `[`: bash may replace the word with file names. */
  readonly globAt: readonly number[];
  /** Some part was quoted or escaped. */
  readonly quoted: boolean;
}

export interface Redirection {
  /** The file descriptor written before the operator (`2>`), if any. */
  readonly fd: string | undefined;
  /** One of `>`, `>>`, `>|`, `&>`, `&>>`, `>&`. */
  readonly operator: string;
  readonly target: Word;
}

export interface SimpleCommand {
  readonly words: readonly Word[];
  readonly redirections: readonly Redirection[];
}

/** A word with no quoting and no pattern characters (for tests and tables). */
export function plainWord(text: string): Word {
  return { text, globAt: [], quoted: false };
}

/** Characters that end a word when unquoted. */
const METACHARACTERS = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

/** Characters that may stand before an unquoted `~` without bash expanding it. */
const TILDE_SAFE_BEFORE = /[A-Za-z0-9_.^+-]/;

/** Output redirection operators, longest first so `>>` is not read as `>`. */
const OUTPUT_OPERATORS = ['&>>', '&>', '>>', '>|', '>&', '>'];

class NotUnderstood extends Error {}

function refuse(): never {
  throw new NotUnderstood();
}

/**
 * The simple commands of `source`, or `undefined` when it uses anything outside the subset above.
 * Leading and trailing blanks and newlines are ignored (not other whitespace: bash keeps `\r`).
 */
export function parseCommandLine(source: string): SimpleCommand[] | undefined {
  try {
    return new Lexer(source.replace(/^[ \t\n]+|[ \t\n]+$/g, '')).commands();
  } catch (error) {
    if (error instanceof NotUnderstood) return undefined;
    throw error;
  }
}

class Lexer {
  private at = 0;

  constructor(private readonly source: string) {}

  commands(): SimpleCommand[] {
    const commands: SimpleCommand[] = [];
    let words: Word[] = [];
    let redirections: Redirection[] = [];
    const endCommand = (): void => {
      if (words.length === 0) refuse(); // `ls;`, `| ls`, `ls &&` and lone redirections
      commands.push({ words, redirections });
      words = [];
      redirections = [];
    };
    if (this.source === '') refuse();
    while (true) {
      this.skipBlanks();
      const char = this.peek();
      if (char === undefined) break;
      const next = this.peek(1);
      if (char === '\n' || char === ';') {
        if (char === ';' && (next === ';' || next === '&')) refuse(); // `;;`, `;&`: only in `case`
        this.at += 1;
        endCommand();
      } else if (char === '&' && next === '&') {
        this.at += 2;
        endCommand();
      } else if (char === '|' && next === '|') {
        this.at += 2;
        endCommand();
      } else if (char === '|') {
        if (next === '&') refuse(); // `|&` also pipes stderr; never needed for a glance
        this.at += 1;
        endCommand();
      } else if (char === '&' && next === '>') {
        redirections.push(this.redirection(undefined));
      } else if (char === '>') {
        redirections.push(this.redirection(undefined));
      } else if (char === '&' || char === '<' || char === '(' || char === ')') {
        refuse(); // background job, input redirection or here-document, subshell
      } else {
        const { word, digitsOnly } = this.word();
        const after = this.peek();
        if (digitsOnly && (after === '>' || after === '<')) {
          if (after === '<') refuse();
          redirections.push(this.redirection(word.text));
        } else {
          words.push(word);
        }
      }
    }
    endCommand();
    return commands;
  }

  private peek(offset = 0): string | undefined {
    return this.source[this.at + offset];
  }

  private skipBlanks(): void {
    while (true) {
      const char = this.peek();
      if (char === ' ' || char === '\t') this.at += 1;
      else if (char === '\\' && this.peek(1) === '\n') this.at += 2;
      else return;
    }
  }

  private redirection(fd: string | undefined): Redirection {
    const rest = this.source.slice(this.at);
    const operator = OUTPUT_OPERATORS.find((candidate) => rest.startsWith(candidate));
    if (operator === undefined) refuse();
    this.at += operator.length;
    this.skipBlanks();
    const char = this.peek();
    if (char === undefined || METACHARACTERS.has(char)) refuse();
    return { fd, operator, target: this.word().word };
  }

  /** Reads one word; `digitsOnly` when it is unquoted digits (a file descriptor before `>`). */
  private word(): { word: Word; digitsOnly: boolean } {
    let text = '';
    const globAt: number[] = [];
    let quoted = false;
    let digitsOnly = true;
    /** The last character added was an unquoted literal that may precede `~`. */
    let tildeMayFollow = false;
    while (this.at < this.source.length) {
      const char = this.source[this.at] as string;
      if (METACHARACTERS.has(char)) break;
      if (char === "'") {
        const close = this.source.indexOf("'", this.at + 1);
        if (close < 0) refuse();
        text += this.source.slice(this.at + 1, close);
        this.at = close + 1;
        quoted = true;
        digitsOnly = false;
        tildeMayFollow = false;
        continue;
      }
      if (char === '"') {
        text += this.doubleQuoted();
        quoted = true;
        digitsOnly = false;
        tildeMayFollow = false;
        continue;
      }
      if (char === '\\') {
        const escaped = this.source[this.at + 1];
        if (escaped === undefined) refuse();
        this.at += 2;
        if (escaped === '\n') continue; // line continuation: nothing is added
        text += escaped;
        quoted = true;
        digitsOnly = false;
        tildeMayFollow = false;
        continue;
      }
      if (char === '$' || char === '`' || char === '{' || char === '}' || char === '!') refuse();
      if (char === '#' && text === '' && !quoted) refuse();
      if (char === '~' && !tildeMayFollow) refuse();
      if (isControl(char)) refuse();
      if (char === '*' || char === '?' || char === '[') globAt.push(text.length);
      text += char;
      if (char < '0' || char > '9') digitsOnly = false;
      tildeMayFollow = TILDE_SAFE_BEFORE.test(char);
      this.at += 1;
    }
    return { word: { text, globAt, quoted }, digitsOnly: digitsOnly && text !== '' };
  }

  /** The text of a `"…"` part (the cursor is on the opening quote). */
  private doubleQuoted(): string {
    let text = '';
    this.at += 1;
    while (true) {
      const char = this.source[this.at];
      if (char === undefined) refuse();
      if (char === '"') {
        this.at += 1;
        return text;
      }
      if (char === '\\') {
        const escaped = this.source[this.at + 1];
        if (escaped !== undefined && '$`"\\\n'.includes(escaped)) {
          if (escaped !== '\n') text += escaped;
          this.at += 2;
          continue;
        }
      }
      // `$…` and backticks expand inside double quotes; `!` is history expansion where it is on.
      if (char === '$' || char === '`' || char === '!') refuse();
      if (isControl(char) && char !== '\n' && char !== '\t') refuse();
      text += char;
      this.at += 1;
    }
  }
}

/** C0 controls, DEL, and Unicode separators or format characters that a reader would not see. */
function isControl(char: string): boolean {
  return /[\u0000-\u001f\u007f-\u009f\u00ad\u2000-\u200f\u2028-\u202f\u205f-\u206f\ufeff]/.test(char);
}
