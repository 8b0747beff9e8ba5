// Hostile client frames of the data phase, with the ERROR code a server must answer each with. One
// table for two receivers: the codec (test/protocol/hostile.test.ts) and the real session helper
// (test/native/helper-hostile.test.ts), so both are held to the same codes.
import type { ProtocolErrorCode } from '../../src/protocol/errors.ts';
import { FIXTURES } from './fixtures.ts';

export interface HostileFrame {
  name: string;
  hex: string;
  /** What the codec's decoder throws; undefined where only the session's state decides (credit, order). */
  codec?: ProtocolErrorCode;
  /** The ERROR code the client is sent. */
  wire: number;
}

const PROTOCOL = 1;
const FLOW = 9;

export const HOSTILE_DATA_PHASE: HostileFrame[] = [
  { name: 'type 0x00', hex: '00 00000000', codec: 'UNKNOWN_TYPE', wire: PROTOCOL },
  { name: 'type 0x0e', hex: '0e 00000001', codec: 'UNKNOWN_TYPE', wire: PROTOCOL },
  { name: 'type 0xff with the largest length', hex: 'ff ffffffff', codec: 'UNKNOWN_TYPE', wire: PROTOCOL },
  { name: 'START one byte over MAX_FRAME_PAYLOAD', hex: '03 00010001', codec: 'OVERSIZE', wire: PROTOCOL },
  { name: 'START with the largest length', hex: '03 ffffffff', codec: 'OVERSIZE', wire: PROTOCOL },
  { name: 'CREDIT of length 0xffffffff', hex: '0d ffffffff', codec: 'BAD_LENGTH', wire: PROTOCOL },
  { name: 'an empty INPUT', hex: '05 00000000', codec: 'BAD_LENGTH', wire: PROTOCOL },
  { name: 'INPUT one byte over MAX_IO_PAYLOAD', hex: '05 00008001', codec: 'OVERSIZE', wire: PROTOCOL },
  { name: 'RESIZE of 5 bytes', hex: '07 00000005 0001000100', codec: 'BAD_LENGTH', wire: PROTOCOL },
  { name: 'RESIZE to 0 rows', hex: '07 00000004 0000 0050', codec: 'BAD_VALUE', wire: PROTOCOL },
  { name: 'RESIZE to 0 cols', hex: '07 00000004 0018 0000', codec: 'BAD_VALUE', wire: PROTOCOL },
  { name: 'SIGNAL 0', hex: '08 00000001 00', codec: 'BAD_VALUE', wire: PROTOCOL },
  { name: 'SIGNAL 65', hex: '08 00000001 41', codec: 'BAD_VALUE', wire: PROTOCOL },
  { name: 'SIGNAL of 2 bytes', hex: '08 00000002 0202', codec: 'BAD_LENGTH', wire: PROTOCOL },
  { name: 'STOP with a payload', hex: '09 00000001 00', codec: 'BAD_LENGTH', wire: PROTOCOL },
  { name: 'CREDIT 0', hex: '0d 00000004 00000000', codec: 'BAD_VALUE', wire: PROTOCOL },
  { name: 'CREDIT over MAX_WINDOW', hex: '0d 00000004 01000001', codec: 'BAD_VALUE', wire: PROTOCOL },
  // Valid frames the session refuses: order and policy.
  { name: 'SIGNAL 31 (not allowed)', hex: '08 00000001 1f', wire: PROTOCOL },
  { name: 'HELLO during the session', hex: '01 00000008 4f435054 0001 0001', wire: PROTOCOL },
  // The initial window plus this reaches MAX_WINDOW + 1.
  { name: 'CREDIT beyond the 16 MiB window', hex: '0d 00000004 00fc0001', wire: FLOW },
  // Frames only a server sends, refused on their header.
  ...FIXTURES.filter((f) => f.direction === 'to-client' && f.frame.type !== 'credit').map((f) => ({
    name: `${f.frame.type.toUpperCase()} from a client (${f.name})`,
    hex: f.hex.replace(/\s+/g, '').slice(0, 10),
    codec: 'WRONG_DIRECTION' as const,
    wire: PROTOCOL,
  })),
];
