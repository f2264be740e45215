/**
 * The bottom-line editor: a pure state machine from raw terminal bytes to edits and submitted lines.
 * It does no I/O; the terminal layer feeds it what stdin delivers (raw mode) and redraws from
 * `text` / `cursor` afterwards.
 *
 * Invariants:
 * - Bytes arrive in arbitrary chunks. UTF-8 is decoded incrementally, so a character split across
 *   two reads is never garbled, and an escape sequence split across reads is completed on the next.
 * - The buffer is edited by character (code point), never by byte: Backspace removes a whole `你`.
 * - Nothing a key sends is inserted as text unless it is printable: control bytes, unknown escape
 *   sequences and Alt chords are swallowed, and an escape sequence that runs longer than
 *   `maxEscapeLength` is abandoned so a stray ESC cannot eat the user's typing.
 * - Raw mode turns off the terminal's own signal keys, so Ctrl-C arrives here as a byte (0x03) and is
 *   reported as an `interrupt` event; the caller decides what an interrupt means.
 */

export type EditorEvent =
  | { readonly kind: 'submit'; readonly line: string }
  | { readonly kind: 'eof' }
  | { readonly kind: 'interrupt' };

export interface LineEditorPolicy {
  /** An escape sequence longer than this is garbage (or a key we do not know); stop waiting for its end. */
  readonly maxEscapeLength: number;
}

export const defaultLineEditorPolicy: LineEditorPolicy = { maxEscapeLength: 8 };

const CTRL_A = '\x01';
const CTRL_C = '\x03';
const CTRL_D = '\x04';
const CTRL_E = '\x05';
const BACKSPACE_CTRL_H = '\x08';
const TAB = '\t';
const LINE_FEED = '\n';
const CARRIAGE_RETURN = '\r';
const CTRL_U = '\x15';
const ESC = '\x1b';
const DELETE = '\x7f';

type CursorAction = 'left' | 'right' | 'home' | 'end' | 'delete-forward' | 'none';

/** What a complete escape sequence (without the ESC) means to the editor. */
function interpretEscape(sequence: string): CursorAction {
  switch (sequence) {
    case '[D':
    case 'OD':
      return 'left';
    case '[C':
    case 'OC':
      return 'right';
    case '[H':
    case 'OH':
    case '[1~':
    case '[7~':
      return 'home';
    case '[F':
    case 'OF':
    case '[4~':
    case '[8~':
      return 'end';
    case '[3~':
      return 'delete-forward';
    default:
      // Up/down (no history), function keys, modified arrows, Alt chords: deliberately nothing.
      return 'none';
  }
}

/** Is the escape sequence collected so far complete? */
function escapeComplete(sequence: string): boolean {
  if (sequence.length === 0) return false;
  const introducer = sequence[0];
  if (introducer === '[') {
    // CSI ends with a final byte in @..~ after parameter/intermediate bytes.
    return sequence.length >= 2 && /[\x40-\x7e]$/.test(sequence);
  }
  if (introducer === 'O') return sequence.length >= 2; // SS3: exactly one more character
  return true; // ESC + anything else is an Alt chord: one character
}

export class LineEditor {
  private readonly decoder = new TextDecoder('utf-8');
  private characters: string[] = [];
  private position = 0;
  /** The escape sequence being collected (without the ESC), or null when not inside one. */
  private escape: string | null = null;
  /** A CR was the last thing seen: a following LF belongs to the same Enter (CRLF from a paste). */
  private afterCarriageReturn = false;

  constructor(private readonly policy: LineEditorPolicy = defaultLineEditorPolicy) {}

  /** The half-typed line. */
  get text(): string {
    return this.characters.join('');
  }

  /** Cursor position in characters from the start of the line. */
  get cursor(): number {
    return this.position;
  }

  /** The part of the line right of the cursor (the terminal layer moves the cursor back over it). */
  get textAfterCursor(): string {
    return this.characters.slice(this.position).join('');
  }

  /** Feed raw bytes (or already-decoded text); returns what the user completed in them, in order. */
  feed(chunk: Uint8Array | string): EditorEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const events: EditorEvent[] = [];
    for (const character of text) {
      const event = this.key(character);
      if (event) events.push(event);
    }
    return events;
  }

  private key(character: string): EditorEvent | null {
    const wasAfterCarriageReturn = this.afterCarriageReturn;
    this.afterCarriageReturn = false;

    if (this.escape !== null) {
      this.continueEscape(character);
      return null;
    }
    switch (character) {
      case CARRIAGE_RETURN:
        this.afterCarriageReturn = true;
        return this.submit();
      case LINE_FEED:
        return wasAfterCarriageReturn ? null : this.submit();
      case ESC:
        this.escape = '';
        return null;
      case CTRL_C:
        return { kind: 'interrupt' };
      case CTRL_D:
        return this.characters.length === 0 ? { kind: 'eof' } : null;
      case DELETE:
      case BACKSPACE_CTRL_H:
        if (this.position > 0) {
          this.characters.splice(this.position - 1, 1);
          this.position -= 1;
        }
        return null;
      case CTRL_U:
        this.characters = [];
        this.position = 0;
        return null;
      case CTRL_A:
        this.position = 0;
        return null;
      case CTRL_E:
        this.position = this.characters.length;
        return null;
      case TAB:
        // A pasted tab is a separator the user meant; keep it as a space rather than losing it.
        this.insert(' ');
        return null;
      default:
        if (/^[\p{Cc}]$/u.test(character)) return null; // other C0, DEL-range and C1 controls
        this.insert(character);
        return null;
    }
  }

  private continueEscape(character: string): void {
    const sequence = `${this.escape}${character}`;
    if (escapeComplete(sequence)) {
      this.escape = null;
      this.move(interpretEscape(sequence));
    } else if (sequence.length >= this.policy.maxEscapeLength) {
      this.escape = null;
    } else {
      this.escape = sequence;
    }
  }

  private move(action: CursorAction): void {
    switch (action) {
      case 'left':
        this.position = Math.max(0, this.position - 1);
        return;
      case 'right':
        this.position = Math.min(this.characters.length, this.position + 1);
        return;
      case 'home':
        this.position = 0;
        return;
      case 'end':
        this.position = this.characters.length;
        return;
      case 'delete-forward':
        this.characters.splice(this.position, 1);
        return;
      case 'none':
        return;
    }
  }

  private insert(character: string): void {
    this.characters.splice(this.position, 0, character);
    this.position += 1;
  }

  private submit(): EditorEvent {
    const line = this.text;
    this.characters = [];
    this.position = 0;
    return { kind: 'submit', line };
  }
}
