/**
 * The flags that bound what a task may cost: `--budget USD` (go and run) and `--stall N` (go).
 * Bad values are usage errors (exit 2), each saying what a good one looks like.
 */
import { InvalidArgumentError } from 'commander';

/** `5`, `0.50` or `$5`: a positive number of US dollars. */
export function parseBudgetUsd(value: string): number {
  const usd = Number(value.trim().replace(/^\$/, ''));
  if (value.trim() === '' || !Number.isFinite(usd) || usd <= 0)
    throw new InvalidArgumentError('give the budget as a positive number of US dollars, e.g. --budget 5');
  return usd;
}

/** A whole number of rounds, 2 or more, or 0 for no brake (1 would stop after every round). */
export function parseStallRounds(value: string): number {
  const rounds = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || rounds === 1)
    throw new InvalidArgumentError(
      'give a whole number of rounds, 2 or more (0 turns the brake off), e.g. --stall 3',
    );
  return rounds;
}

export const BUDGET_HELP =
  'cap the whole task in US dollars: every run, round, judge and side question in this directory counts';
export const STALL_HELP =
  'stop when this many rounds in a row change nothing (checks, open items, files); 0 = never';
