// What a kept session's output may do to the terminal of whoever attaches (root included), as a pure
// streaming filter: control strings (OSC, DCS, APC, PM, SOS: the clipboard through OSC 52, the title,
// DECRQSS, sixel, hyperlinks) and the CSI/ESC requests a terminal answers by typing into its own input
// (device status `\e[6n`, device attributes, window reports `\e[21t`, mode reports) are dropped; every other
// byte passes as it came. The state is kept across chunks (a sequence may span reads). It errs towards
// dropping: each introducer a terminal may honour is recognised, 7-bit (ESC ]), UTF-8 C1 (C2 9D) and raw C1.
// A raw byte 0x80-0x9f is a C1 control only to a terminal that is not decoding UTF-8 (ECMA-43's 8-bit
// codes; xterm without utf8): inside a UTF-8 sequence it is text to a UTF-8 terminal, so the filter
// needs to know which one it writes to (`eightBit`, from the locale: eightBitLocale below).
// Sources: ECMA-48 5.6 (control strings), xterm's ctlseqs ("Operating System Commands", "Device Status
// Report", "Window manipulation", "Request Mode"), and its parser's rules for ESC, CAN and SUB inside one.

const ESC = 0x1b;
const BEL = 0x07;
const CAN = 0x18;
const SUB = 0x1a;
/** A CSI longer than this is consumed and dropped whole: a long run of parameters must not smuggle a request. */
const MAX_CSI = 256;

/** C1 controls by their last byte (0x80-0x9f): the string introducers and CSI. */
const C1_STRINGS = new Set([0x90 /* DCS */, 0x98 /* SOS */, 0x9d /* OSC */, 0x9e /* PM */, 0x9f /* APC */]);
const C1_CSI = 0x9b;
/** ESC + this byte: the 7-bit forms of the same. */
const ESC_STRINGS: Readonly<Record<number, 'osc' | 'other'>> = { 0x5d: 'osc', 0x50: 'other', 0x5f: 'other', 0x5e: 'other', 0x58: 'other' };
const ESC_CSI = 0x5b;
/** ESC Z (DECID): the terminal answers with its attributes. */
const ESC_REQUESTS = new Set([0x5a]);
/** SCI, read by VT terminals as DECID's 8-bit form (ESC Z): answered like it. */
const C1_DECID = 0x9a;

type State =
  | { kind: 'ground' }
  | { kind: 'escape' } // ESC seen
  | { kind: 'c2' } // a UTF-8 lead byte C2 seen: its next byte may make a C1 control
  | { kind: 'csi'; bytes: number[]; overflow: boolean }
  | { kind: 'string'; osc: boolean; escape: boolean }; // dropping; escape: an ESC seen inside

/** CSI finals a terminal answers when they come after this intermediate (xterm's ctlseqs): DECRQM ($p),
 * DECRQTSR ($u), DECRQPSR ($w), XTREPORTSGR (#|), XTREPORTCOLORS (#R), DECRQCRA's checksum (*y), DECRQDE
 * ("v), DECRQLP (' |), DECRQUPSS (&u). */
const INTERMEDIATE_REPORTS: readonly [intermediate: string, final: string][] = [
  ['$', 'p'], ['$', 'u'], ['$', 'w'], ['#', '|'], ['#', 'R'], ['*', 'y'], ['"', 'v'], ["'", '|'], ['&', 'u'],
];

/** Whether a whole CSI (its bytes after the introducer: parameters, intermediates, final) asks the terminal to
 * answer: DSR and DA (n, c), window operations and reports (t), DECREQTPARM (x), XTVERSION (>q),
 * XTSMGRAPHICS (?S), the keyboard-protocol query (?u), XTQMODKEYS (?m), and INTERMEDIATE_REPORTS. */
export function isReportRequest(body: readonly number[]): boolean {
  const final = body[body.length - 1];
  const first = body[0];
  const intermediates = body.slice(0, -1).filter((byte) => byte >= 0x20 && byte <= 0x2f);
  if (final === undefined) return false;
  const f = String.fromCharCode(final);
  if (intermediates.length === 0 && 'nctx'.includes(f)) return true;
  if (INTERMEDIATE_REPORTS.some(([i, last]) => f === last && intermediates.includes(i.charCodeAt(0)))) return true;
  if (first === 0x3e /* > */ && f === 'q') return true;
  if (first === 0x3f /* ? */ && (f === 'S' || f === 'u' || f === 'm')) return true;
  return false;
}

/** Whether the locale's character set is not UTF-8 (LC_ALL, then LC_CTYPE, then LANG, as setlocale(3)
 * reads them): its terminal then takes raw 0x80-0x9f as C1 controls. "C"/"POSIX" or nothing set counts as
 * 8-bit: the strict reading, at worst a UTF-8 sequence's C1-valued continuation bytes are dropped. */
export function eightBitLocale(env: Readonly<Record<string, string | undefined>>): boolean {
  const locale = env.LC_ALL || env.LC_CTYPE || env.LANG || '';
  return !/\.utf-?8(@|$)/i.test(locale);
}

export interface TerminalOutputFilterOptions {
  /** The terminal takes raw 0x80-0x9f as C1 controls (not UTF-8): each is judged as one, never as text. */
  eightBit?: boolean;
}

export class TerminalOutputFilter {
  #state: State = { kind: 'ground' };
  /** UTF-8 continuation bytes still expected: a 0x80-0x9f there is text, not a C1 control. */
  #continuations = 0;
  readonly #eightBit: boolean;

  constructor(options: TerminalOutputFilterOptions = {}) {
    this.#eightBit = options.eightBit ?? false;
  }

  /** The bytes of `chunk` a terminal may be given (state carries over to the next chunk). */
  feed(chunk: Uint8Array): Buffer {
    const out: number[] = [];
    for (const byte of chunk) this.#step(byte, out);
    return Buffer.from(out);
  }

  #step(byte: number, out: number[]): void {
    const state = this.#state;
    switch (state.kind) {
      case 'ground':
        return this.#ground(byte, out);
      case 'escape':
        this.#state = { kind: 'ground' };
        if (byte === ESC_CSI) this.#state = { kind: 'csi', bytes: [], overflow: false };
        else if (ESC_STRINGS[byte] !== undefined) this.#state = { kind: 'string', osc: ESC_STRINGS[byte] === 'osc', escape: false };
        else if (ESC_REQUESTS.has(byte)) return;
        else if (byte === ESC) this.#state = { kind: 'escape' };
        else if (byte === CAN || byte === SUB) out.push(byte);
        else if (byte < 0x20) {
          // Executed where it stands, and the ESC still waits for its byte (xterm's parser).
          out.push(byte);
          this.#state = { kind: 'escape' };
        } else if (byte >= 0x80) {
          out.push(ESC);
          this.#ground(byte, out);
        } else out.push(ESC, byte);
        return;
      case 'c2':
        this.#state = { kind: 'ground' };
        if (byte === C1_CSI) this.#state = { kind: 'csi', bytes: [], overflow: false };
        else if (C1_STRINGS.has(byte)) this.#state = { kind: 'string', osc: byte === 0x9d, escape: false };
        else if (byte === C1_DECID) return;
        else {
          out.push(0xc2);
          this.#continuations = 0;
          this.#ground(byte, out);
        }
        return;
      case 'csi':
        return this.#csi(state, byte, out);
      case 'string':
        if (state.escape) {
          state.escape = false;
          // ESC \ is ST; an ESC followed by anything else ends the string too and begins a new sequence.
          this.#state = { kind: 'ground' };
          if (byte !== 0x5c) this.#step(ESC, out), this.#step(byte, out);
        } else if (byte === ESC) state.escape = true;
        else if ((byte === BEL && state.osc) || byte === CAN || byte === SUB || byte === 0x9c) this.#state = { kind: 'ground' };
        return;
    }
  }

  #ground(byte: number, out: number[]): void {
    if (this.#continuations > 0 && byte >= 0x80 && byte <= 0xbf) {
      this.#continuations -= 1;
      out.push(byte);
      return;
    }
    this.#continuations = 0;
    if (byte === ESC) this.#state = { kind: 'escape' };
    else if (byte === 0xc2 && !this.#eightBit) this.#state = { kind: 'c2' };
    else if (byte === C1_CSI) this.#state = { kind: 'csi', bytes: [], overflow: false };
    else if (C1_STRINGS.has(byte)) this.#state = { kind: 'string', osc: byte === 0x9d, escape: false };
    else if (byte === C1_DECID) return;
    else if (this.#eightBit) out.push(byte);
    else {
      if (byte >= 0xc3 && byte <= 0xdf) this.#continuations = 1;
      else if (byte >= 0xe0 && byte <= 0xef) this.#continuations = 2;
      else if (byte >= 0xf0 && byte <= 0xf7) this.#continuations = 3;
      out.push(byte);
    }
  }

  #csi(state: Extract<State, { kind: 'csi' }>, byte: number, out: number[]): void {
    if (byte === ESC) {
      this.#state = { kind: 'escape' };
      return;
    }
    if (byte === CAN || byte === SUB) {
      this.#state = { kind: 'ground' };
      return;
    }
    if (byte < 0x20) {
      out.push(byte); // a C0 control inside a CSI is executed on the spot (xterm, ECMA-48 5.4)
      return;
    }
    if (byte > 0x7e) {
      this.#state = { kind: 'ground' };
      this.#ground(byte, out);
      return;
    }
    if (state.bytes.length < MAX_CSI) state.bytes.push(byte);
    else state.overflow = true;
    if (byte < 0x40) return;
    this.#state = { kind: 'ground' };
    if (state.overflow || isReportRequest(state.bytes)) return;
    out.push(ESC, ESC_CSI, ...state.bytes); // a C1 CSI passes in its 7-bit form
  }
}
