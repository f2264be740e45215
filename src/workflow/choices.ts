/**
 * Reading a person's answer to a question flower itself asked with fixed options (what to do about
 * an unverifiable goal, whether to go on after the brake). The channel has already turned a number
 * into its option's text; what remains is matching a typed answer.
 */

/** The option `answer` names: the option itself, or an answer that starts with its first word ("accept"). */
export function pickChoice<Choice extends string>(
  answer: string,
  choices: readonly Choice[],
): Choice | undefined {
  const lowered = answer.trim().toLowerCase();
  if (lowered === '') return undefined;
  return choices.find((choice) => {
    const firstWord = choice.split(' ')[0]?.toLowerCase() ?? choice.toLowerCase();
    return lowered === choice.toLowerCase() || lowered.startsWith(firstWord);
  });
}
