/**
 * An event with every credential value in its text and payload masked (see `config/secret-mask.ts`),
 * for the renderer: whatever branch shows whichever field, no secret reaches the screen.
 *
 * The SDK message the event came from (`raw`) is passed on unmasked: the renderer reads only its
 * usage numbers (a worker's tokens and dollars), never its text, and masking it would cost a walk
 * over the whole message for nothing.
 */
import type { SecretMask } from '../../config/secret-mask.js';
import type { FlowerEvent } from '../../runtime/events.js';

function maskValue(value: unknown, mask: SecretMask): unknown {
  if (typeof value === 'string') return mask(value);
  if (Array.isArray(value)) return value.map((item) => maskValue(item, mask));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, maskValue(field, mask)]));
  }
  return value;
}

export function maskEvent(event: FlowerEvent, mask: SecretMask): FlowerEvent {
  return { ...event, text: mask(event.text), payload: maskValue(event.payload, mask) } as FlowerEvent;
}
