/**
 * Option tables: what a tool may be given in a glance, parsed the way the tool itself parses it.
 *
 * A table lists the options known to be safe (an allow list) and what each one's value and each
 * operand must be; anything not listed makes the command not a glance.
 *
 * Invariants:
 * - Long options must be spelled in full. GNU getopt also accepts unambiguous prefixes, but
 *   whether a prefix is unambiguous depends on the tool's whole option list, not on ours: our
 *   `--output-delimiter` would make `--output` look like a prefix, while `sort --output` is a
 *   real option that writes a file. An exact name means the same thing to us and to the tool.
 * - Short options may be clustered (`-la`); a letter that takes a value takes the rest of the
 *   cluster, or the next word, exactly as getopt does.
 * - With GNU permutation (the default) every word starting with `-` is an option wherever it
 *   stands, up to `--`; after `--` everything is an operand.
 * - A word with pattern characters is never an option or an option's separate value; as an
 *   operand it may stand only among the trailing variadic operands (`rest`), where expanding into
 *   several names cannot shift another operand into an output position (`uniq IN OUT`).
 */
import type { Word } from './command-line.js';
import { namedPath, readablePath } from './paths.js';

/** Decides whether a value or operand is safe; `patterns` says a pattern may stand there. */
export interface ValueRule {
  readonly accepts: (word: Word) => boolean;
  readonly patterns?: boolean;
}

/** Any literal text that is not a file (a number, a format, a search pattern). */
export const TEXT: ValueRule = { accepts: (word) => word.globAt.length === 0 };

/** Text that may carry pattern characters for the tool itself (`--include=*.ts`). */
export const PATTERN_TEXT: ValueRule = { accepts: () => true, patterns: true };

/** A file whose contents are read. */
export const CONTENT: ValueRule = { accepts: readablePath, patterns: true };

/** A file or directory that is only listed or measured. */
export const NAME: ValueRule = { accepts: namedPath, patterns: true };

/** A value that must satisfy `predicate` on its text (never a pattern). */
export function textWhere(predicate: (text: string) => boolean): ValueRule {
  return { accepts: (word) => word.globAt.length === 0 && predicate(word.text) };
}

/** One of the listed words. */
export function oneOf(...choices: string[]): ValueRule {
  return textWhere((text) => choices.includes(text));
}

export interface OptionTable {
  /** Short options without a value, as one string (`'lah'`). */
  readonly flags?: string;
  /** Short options with a required value. */
  readonly values?: Readonly<Record<string, ValueRule>>;
  /** Short options whose value is optional and, when present, glued (`-uno`). */
  readonly optional?: Readonly<Record<string, ValueRule>>;
  /** Long options without a value (names without `--`). */
  readonly long?: readonly string[];
  /** Long options with a required value: `--name=value` or `--name value`. */
  readonly longValues?: Readonly<Record<string, ValueRule>>;
  /** Long options whose value is optional and only ever glued: `--color` or `--color=never`. */
  readonly longOptional?: Readonly<Record<string, ValueRule>>;
  /** Long options with two values (`jq --arg NAME VALUE`). */
  readonly longPairs?: Readonly<Record<string, readonly [ValueRule, ValueRule]>>;
  /** `-NUM` is an option (`head -5`, `git log -3`). */
  readonly numeric?: boolean;
  /** Options may follow operands (GNU getopt's default); false: the first operand ends them. */
  readonly permute?: boolean;
}

export interface ParsedOption {
  /** `-x` or `--name` (a numeric option is `-NUM`). */
  readonly name: string;
  readonly value: Word | undefined;
}

export interface ParsedArguments {
  readonly options: readonly ParsedOption[];
  readonly operands: readonly Word[];
}

/** The options and operands of `args`, or `undefined` when something is not in the table. */
export function parseArguments(args: readonly Word[], table: OptionTable): ParsedArguments | undefined {
  const options: ParsedOption[] = [];
  const operands: Word[] = [];
  const permute = table.permute ?? true;
  let index = 0;
  const take = (rule: ValueRule): Word | undefined => {
    const value = args[index + 1];
    if (value === undefined || value.globAt.length > 0 || !rule.accepts(value)) return undefined;
    index += 1;
    return value;
  };
  for (; index < args.length; index += 1) {
    const arg = args[index] as Word;
    const text = arg.text;
    const isOption = text.startsWith('-') && text !== '-' && (permute || operands.length === 0);
    if (!isOption) {
      operands.push(arg);
      continue;
    }
    if (text === '--') {
      operands.push(...args.slice(index + 1));
      break;
    }
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const name = equals < 0 ? text.slice(2) : text.slice(2, equals);
      const nameEnd = equals < 0 ? text.length : equals;
      if (arg.globAt.some((at) => at < nameEnd)) return undefined;
      const glued: Word | undefined =
        equals < 0
          ? undefined
          : {
              text: text.slice(equals + 1),
              globAt: arg.globAt.map((at) => at - equals - 1),
              quoted: arg.quoted,
            };
      // A pattern in a glued value expands to words that keep the `--name=` prefix: harmless
      // exactly when the value is a pattern for the tool itself.
      const gluedWithPattern = (rule: ValueRule): boolean =>
        glued !== undefined && (glued.globAt.length === 0 || rule === PATTERN_TEXT) && rule.accepts(glued);
      if (table.long?.includes(name)) {
        if (glued !== undefined) return undefined;
        options.push({ name: `--${name}`, value: undefined });
      } else if (table.longValues && Object.hasOwn(table.longValues, name)) {
        const rule = table.longValues[name] as ValueRule;
        if (glued !== undefined) {
          if (!gluedWithPattern(rule)) return undefined;
          options.push({ name: `--${name}`, value: glued });
        } else {
          const value = take(rule);
          if (value === undefined) return undefined;
          options.push({ name: `--${name}`, value });
        }
      } else if (table.longOptional && Object.hasOwn(table.longOptional, name)) {
        const rule = table.longOptional[name] as ValueRule;
        if (glued !== undefined && !gluedWithPattern(rule)) return undefined;
        options.push({ name: `--${name}`, value: glued });
      } else if (table.longPairs && Object.hasOwn(table.longPairs, name) && glued === undefined) {
        const [first, second] = table.longPairs[name] as readonly [ValueRule, ValueRule];
        const key = take(first);
        const value = key === undefined ? undefined : take(second);
        if (value === undefined) return undefined;
        options.push({ name: `--${name}`, value });
      } else {
        return undefined;
      }
      continue;
    }
    if (arg.globAt.length > 0) return undefined;
    if (table.numeric && /^-\d+$/.test(text)) {
      options.push({ name: text, value: undefined });
      continue;
    }
    // A cluster of short options: `-la`, `-n5`, `-n 5`.
    for (let letter = 1; letter < text.length; letter += 1) {
      const option = text[letter] as string;
      const rest = text.slice(letter + 1);
      if (table.flags?.includes(option)) {
        options.push({ name: `-${option}`, value: undefined });
      } else if (table.values && Object.hasOwn(table.values, option)) {
        const rule = table.values[option] as ValueRule;
        const glued: Word = { text: rest, globAt: [], quoted: arg.quoted };
        const value = rest !== '' ? (rule.accepts(glued) ? glued : undefined) : take(rule);
        if (value === undefined) return undefined;
        options.push({ name: `-${option}`, value });
        break;
      } else if (table.optional && Object.hasOwn(table.optional, option)) {
        const rule = table.optional[option] as ValueRule;
        const glued: Word = { text: rest, globAt: [], quoted: arg.quoted };
        if (rest !== '' && !rule.accepts(glued)) return undefined;
        options.push({ name: `-${option}`, value: rest === '' ? undefined : glued });
        break;
      } else {
        return undefined;
      }
    }
  }
  return { options, operands };
}

/** What the operands must be: fixed positions first, then any number of `rest`. */
export interface OperandRule {
  readonly fixed?: readonly ValueRule[];
  readonly rest?: ValueRule;
  readonly min?: number;
  readonly max?: number;
}

/** True when the operands fit `rule`; patterns only among the `rest`, and only where it allows. */
export function operandsFit(operands: readonly Word[], rule: OperandRule): boolean {
  const fixed = rule.fixed ?? [];
  if (operands.length < (rule.min ?? 0)) return false;
  if (rule.max !== undefined && operands.length > rule.max) return false;
  return operands.every((operand, index) => {
    const positional = fixed[index];
    if (positional) return operand.globAt.length === 0 && positional.accepts(operand);
    const rest = rule.rest;
    if (!rest) return false;
    return (operand.globAt.length === 0 || rest.patterns === true) && rest.accepts(operand);
  });
}

/** A check on a tool's arguments: the shape the tool tables share. */
export type ArgumentCheck = (args: readonly Word[]) => boolean;

export interface ToolSpec extends OptionTable {
  readonly operands?: OperandRule;
  /** A further check once options and operands are parsed (mutually exclusive modes, say). */
  readonly also?: (parsed: ParsedArguments) => boolean;
}

/** The argument check for a tool described by `spec`. */
export function tool(spec: ToolSpec): ArgumentCheck {
  return (args) => {
    const parsed = parseArguments(args, spec);
    if (!parsed) return false;
    if (!operandsFit(parsed.operands, spec.operands ?? { max: 0 })) return false;
    return spec.also ? spec.also(parsed) : true;
  };
}

/** True when any parsed option is named `name` (`-x` or `--long`). */
export function has(parsed: ParsedArguments, ...names: string[]): boolean {
  return parsed.options.some((option) => names.includes(option.name));
}
