/**
 * A human channel for orchestration tests whose questions are answered the moment they are asked,
 * the way a terminal thread would deliver an answer.
 */
import { HumanChannel } from '../../../src/agents/human/channel.js';

/** A channel whose questions are answered at once by `answer` (undefined = leave unanswered). */
export function answeringChannel(
  answer: (question: string, options: string[]) => string | undefined,
  timeoutSeconds = 5,
) {
  const asked: string[] = [];
  const channel: HumanChannel = new HumanChannel({
    timeoutSeconds,
    onEvent: (event) => {
      if (event.payload.kind !== 'question' || event.payload.state !== 'asked') return;
      asked.push(event.text);
      const reply = answer(event.text, event.payload.options);
      if (reply === undefined) channel.decline(event.payload.id);
      else queueMicrotask(() => channel.answer(event.payload.id, reply));
    },
  });
  return { channel, asked };
}
