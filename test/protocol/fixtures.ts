// Hand-written wire bytes for every frame type (never produced by the encoder), with the frames they mean.
import { FrameType } from '../../src/protocol/constants.ts';
import type { Direction, Frame } from '../../src/protocol/frames.ts';

export interface Fixture {
  name: string;
  direction: Direction;
  /** Header and payload as hex; spaces separate fields for the reader and are ignored. */
  hex: string;
  frame: Frame;
}

export function bytes(hex: string): Buffer {
  return Buffer.from(hex.replace(/\s+/g, ''), 'hex');
}

/** The hex of one line of a docs/protocol.md example: its leading hex tokens, before the annotation. */
export function docHex(line: string): string {
  const tokens: string[] = [];
  for (const token of line.trim().split(/\s+/)) {
    if (!/^[0-9a-f]+$/.test(token)) break;
    tokens.push(token);
  }
  return tokens.join('');
}

/** Independent big-endian field helpers for building limit cases; not the encoder. */
export const be = {
  u8: (n: number) => n.toString(16).padStart(2, '0'),
  u16: (n: number) => n.toString(16).padStart(4, '0'),
  u32: (n: number) => n.toString(16).padStart(8, '0'),
  u64: (n: bigint) => n.toString(16).padStart(16, '0'),
  /** A u32-length-prefixed byte string, as in START. */
  str: (text: string) => Buffer.from(text, 'utf8').length.toString(16).padStart(8, '0') + Buffer.from(text, 'utf8').toString('hex'),
};

/** A frame from a type byte and payload hex: the header's length is counted here. */
export function frameHex(type: number, payloadHex: string): string {
  const payload = payloadHex.replace(/\s+/g, '');
  return be.u8(type) + be.u32(payload.length / 2) + payload;
}

/** A START payload from fields; strings are u32-length-prefixed UTF-8. */
export function startHex(opts: {
  rows?: number;
  cols?: number;
  argv?: string[];
  env?: [string, string][];
  argc?: number;
  envc?: number;
  tail?: string;
}): string {
  const argv = opts.argv ?? ['sh'];
  const env = opts.env ?? [];
  return frameHex(
    FrameType.START,
    be.u16(opts.rows ?? 24) + be.u16(opts.cols ?? 80) + be.u64(1n) + be.u64(2n) +
      be.u16(opts.argc ?? argv.length) + be.u16(opts.envc ?? env.length) +
      argv.map(be.str).join('') + env.map(([n, v]) => be.str(n) + be.str(v)).join('') + (opts.tail ?? ''),
  );
}

export const FIXTURES: Fixture[] = [
  {
    name: 'HELLO versions 1..1',
    direction: 'to-server',
    hex: '01 00000008  4f435054 0001 0001',
    frame: { type: 'hello', minVersion: 1, maxVersion: 1 },
  },
  {
    name: 'HELLO versions 1..3',
    direction: 'to-server',
    hex: '01 00000008  4f435054 0001 0003',
    frame: { type: 'hello', minVersion: 1, maxVersion: 3 },
  },
  {
    name: 'WELCOME version 1',
    direction: 'to-client',
    hex: '02 00000002  0001',
    frame: { type: 'welcome', version: 1 },
  },
  {
    name: 'START sh -i with TERM=xterm',
    direction: 'to-server',
    hex:
      '03 00000035  0018 0050 0000000000000803 0000000000001234 0002 0001' +
      ' 00000002 7368  00000002 2d69' +
      ' 00000004 5445524d  00000005 787465726d',
    frame: {
      type: 'start',
      rows: 24,
      cols: 80,
      cwdDev: 0x803n,
      cwdIno: 0x1234n,
      argv: ['sh', '-i'],
      env: [{ name: 'TERM', value: 'xterm' }],
    },
  },
  {
    name: 'START with an empty argument, UTF-8, an empty value and a full u64',
    direction: 'to-server',
    hex:
      '03 00000031  ffff 0001 ffffffffffffffff 0000000000000002 0003 0001' +
      ' 00000001 61  00000000  00000003 e282ac' +
      ' 00000001 58  00000000',
    frame: {
      type: 'start',
      rows: 65535,
      cols: 1,
      cwdDev: 0xffffffffffffffffn,
      cwdIno: 2n,
      argv: ['a', '', '€'],
      env: [{ name: 'X', value: '' }],
    },
  },
  {
    name: 'STARTED pid 4242 pty-7.service',
    direction: 'to-client',
    hex: '04 00000011  00001092 7074792d372e73657276696365',
    frame: { type: 'started', mainPid: 4242, unit: 'pty-7.service' },
  },
  {
    name: 'INPUT "ls\\r"',
    direction: 'to-server',
    hex: '05 00000003  6c730d',
    frame: { type: 'input', data: Buffer.from('ls\r') },
  },
  {
    name: 'OUTPUT with bytes that are not UTF-8',
    direction: 'to-client',
    hex: '06 00000005  68690d0aff',
    frame: { type: 'output', data: Buffer.from([0x68, 0x69, 0x0d, 0x0a, 0xff]) },
  },
  {
    name: 'RESIZE 48x120',
    direction: 'to-server',
    hex: '07 00000004  0030 0078',
    frame: { type: 'resize', rows: 48, cols: 120 },
  },
  {
    name: 'SIGNAL SIGINT',
    direction: 'to-server',
    hex: '08 00000001  02',
    frame: { type: 'signal', signal: 2 },
  },
  { name: 'STOP', direction: 'to-server', hex: '09 00000000', frame: { type: 'stop' } },
  { name: 'STOPPED', direction: 'to-client', hex: '0a 00000000', frame: { type: 'stopped' } },
  {
    name: 'EXIT exited 7 exit-code',
    direction: 'to-client',
    hex: '0b 00000012  01 00000007 00000009 657869742d636f6465',
    frame: { type: 'exit', code: 1, status: 7, result: 'exit-code' },
  },
  {
    name: 'EXIT killed by SIGINT, success',
    direction: 'to-client',
    hex: '0b 00000010  02 00000002 00000007 73756363657373',
    frame: { type: 'exit', code: 2, status: 2, result: 'success' },
  },
  {
    name: 'EXIT with a negative status',
    direction: 'to-client',
    hex: '0b 0000000f  01 ffffffff 00000006 7369676e616c',
    frame: { type: 'exit', code: 1, status: -1, result: 'signal' },
  },
  {
    name: 'ERROR VERSION "no é"',
    direction: 'to-client',
    hex: '0c 00000007  0002 6e6f20c3a9',
    frame: { type: 'error', code: 2, message: 'no é' },
  },
  {
    name: 'ERROR with empty text',
    direction: 'to-client',
    hex: '0c 00000002  0001',
    frame: { type: 'error', code: 1, message: '' },
  },
  {
    name: 'CREDIT 65536 to the server',
    direction: 'to-server',
    hex: '0d 00000004  00010000',
    frame: { type: 'credit', bytes: 65536 },
  },
  {
    name: 'CREDIT 1 to the client',
    direction: 'to-client',
    hex: '0d 00000004  00000001',
    frame: { type: 'credit', bytes: 1 },
  },
];
