// docs/protocol.md against the code: its version 4 refusal, byte by byte, is what the encoder writes and the
// server words for that START, and its receiver checklist's version 4 rows name the codes the decoder raises.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { DEFAULT_SESSION } from '../../src/config/schema.ts';
import { ErrorCode, FrameDecoder, ProtocolError, SessionError, encodeFrame, errorFrame, type FrameOf } from '../../src/protocol/index.ts';
import { resolveSandbox } from '../../src/worker/sandbox-request.ts';
import { attachAnswer, stopAnswer } from '../../src/broker/kept-ended.ts';
import type { EndedRecord } from '../../src/kept-store/index.ts';
import { FIXTURES, docHex } from '../protocol/fixtures.ts';

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');

function section(from: string, to: string): string {
  const start = doc.indexOf(from);
  assert.ok(start >= 0, `docs/protocol.md has "${from}"`);
  return doc.slice(start, doc.indexOf(to, start));
}

/** A fenced block's bytes: on each line, the hex tokens before its annotation. */
function blockBytes(block: string): Buffer {
  return Buffer.from(block.split('\n').map(docHex).join(''), 'hex');
}

const refusal = section('### A refusal, byte by byte', '## Receiver checklist');
const [startBlock, errorBlock] = [...refusal.matchAll(/```\n([\s\S]*?)```/g)].map((m) => blockBytes(m[1]!));

/** Version 1's example START (`sh -i`, `TERM=xterm`), not kept, asking the profile `turbo`. */
const V1_START = FIXTURES.find((fixture) => fixture.name === 'START sh -i with TERM=xterm')!.frame as FrameOf<'start'>;
const START: FrameOf<'start'> = { ...V1_START, keepMs: 0, retainBytes: 0, label: '', profile: 'turbo', budgets: {} };

test("the refusal's START is the encoder's, and a version 4 decoder reads it back whole", () => {
  assert.ok(startBlock && errorBlock, 'two byte blocks');
  assert.is(startBlock.toString('hex'), encodeFrame(START, 4).toString('hex'));
  const decoder = new FrameDecoder('to-server', 4);
  assert.equal(decoder.push(startBlock), [START]);
  assert.ok(decoder.atBoundary);
});

test("the refusal's ERROR is what the server sends for that START under the default configuration", () => {
  let refused: unknown;
  try {
    resolveSandbox(START, DEFAULT_SESSION, 0);
  } catch (error) {
    refused = error;
  }
  assert.instance(refused, SessionError);
  const { wireCode, message } = refused as SessionError;
  assert.is(wireCode, ErrorCode.PROFILE);
  assert.is(errorBlock!.toString('hex'), encodeFrame(errorFrame(wireCode, message), 4).toString('hex'));
  assert.ok(refusal.includes(`The text reads \`${message}\``), 'the doc quotes the text');
  const [frame] = new FrameDecoder('to-client', 4).push(errorBlock!);
  assert.equal(frame, { type: 'error', code: 19, message });
});

/** The checklist's version 4 rows: codec codes and ERROR names, in the table's words. */
function checklistRows(): { check: string; codec: string[]; wire: string[] }[] {
  const table = section('## Receiver checklist', 'Order (state)');
  const names = (cell: string) => [...cell.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!);
  return table
    .split('\n')
    .filter((line) => line.startsWith('| version 4 START'))
    .map((line) => {
      const [, check, codec, wire] = line.split('|').map((cell) => cell.trim());
      return { check: check!, codec: names(codec!), wire: names(wire!) };
    });
}

test("the receiver checklist's version 4 rows name the codes the decoder raises for each violation", () => {
  const at = startBlock!.indexOf(Buffer.from('turbo'));
  const bad = (change: (wire: Buffer) => void) => {
    const wire = Buffer.from(startBlock!);
    change(wire);
    try {
      new FrameDecoder('to-server', 4).push(wire);
    } catch (error) {
      assert.instance(error, ProtocolError);
      return error as ProtocolError;
    }
    throw new Error('the decoder took it');
  };
  const raised = [
    bad((wire) => (wire[at - 1] = 33)),
    bad((wire) => (wire[at] = 0x54)), // "Turbo"
    bad((wire) => (wire[at + 5] = 4)),
    bad((wire) => (wire[at + 6] = 0x10)),
    bad((wire) => (wire[at + 7 + 7] = 1)), // maxTimeMs 1 without its flag
  ];
  const wireName = (code: number) => Object.entries(ErrorCode).find(([, value]) => value === code)![0];
  const rows = checklistRows();
  assert.is(rows.length, 3, 'one row each for the profile, the network byte and the budgets');
  for (const error of raised) {
    const row = rows.find((r) => r.wire.includes(wireName(error.wireCode)));
    assert.ok(row, `a row for ${wireName(error.wireCode)}: ${error.message}`);
    assert.ok(row!.codec.includes(error.code), `${row!.check}: ${error.code} (${error.message})`);
  }
});

test('a version 3 START sent after WELCOME 4 (below 73 bytes) is refused on its header, PROTOCOL', () => {
  const short = encodeFrame({ ...V1_START, keepMs: 0, retainBytes: 0, label: '' }, 3);
  assert.is(short.readUInt32BE(1), 63);
  try {
    new FrameDecoder('to-server', 4).push(short);
    assert.unreachable('the decoder took it');
  } catch (error) {
    assert.instance(error, ProtocolError);
    assert.equal([(error as ProtocolError).code, (error as ProtocolError).wireCode], ['BAD_LENGTH', ErrorCode.PROTOCOL]);
  }
  assert.ok(doc.includes('a payload below 73 bytes\n(a version 3 START sent after WELCOME 4, say) is refused on its header, `PROTOCOL`'));
});

test("an ended session's ATTACH, byte by byte: what the server answers from the end it kept, and STOP_SESSION's STOPPED", () => {
  const block = section("### An ended session's ATTACH, byte by byte", '## Version 4');
  const answer = Buffer.concat([...block.matchAll(/```\n([\s\S]*?)```/g)].map((m) => blockBytes(m[1]!)));
  const accounting = { cpuUsageNsec: 12_500_000, memoryBytes: null, ioReadBytes: 12288, ioWriteBytes: 0, tasks: null, inputBytes: null, outputBytes: null, durationUsec: 3_600_000_000 };
  const session = { sessionId: 0xa3c9e01b2d4f5, programPid: 0x1093, mainPid: 0x1092, unit: 'pty-7.service' } as EndedRecord['session'];
  // Detached at 0x205 in generation 1 (the START's connection); the program killed by SIGTERM at the wall clock.
  const ended = { session, end: { code: 2, status: 15, result: 'timeout', accounting }, next: String(0x205), generation: 1 } as EndedRecord;
  const frames = attachAnswer(ended, { role: 1, fromOffset: 0x200n });
  assert.is(answer!.toString('hex'), Buffer.concat(frames.map((frame) => encodeFrame(frame, 3))).toString('hex'));
  assert.equal(new FrameDecoder('to-client', 3).push(answer!).map((frame) => frame.type), ['attached', 'truncated', 'exit']);
  const stopped = encodeFrame(stopAnswer(ended), 3).toString('hex');
  assert.ok(block.includes(`\`${stopped.slice(0, 2)} ${stopped.slice(2, 10)}  ${stopped.slice(10, 12)} ${stopped.slice(12, 20)} …\``), stopped);
  // FROM_NOW is that last offset: no TRUNCATED, oldest and next 0x205.
  const now = attachAnswer(ended, { role: 2, fromOffset: 0xffff_ffff_ffff_ffffn });
  assert.equal(now.map((frame) => frame.type), ['attached', 'exit']);
  assert.equal(now[0], { ...frames[0], role: 2, generation: 1 });
});

test.run();
