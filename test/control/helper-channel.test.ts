// The helper's messages as the worker decodes them: strict, bounded, split anywhere; built by hand.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HELPER_DIALECT, HelperChannelError, HelperDecoder, encodeCommand, encodeGo, type HelperMessage } from '../../src/control/helper-channel.ts';

function message(type: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

function end(reason: number, code: number, remainder: Buffer, text: Buffer | string): Buffer {
  const fixed = Buffer.alloc(23);
  fixed[0] = reason;
  fixed.writeUInt16BE(code, 1);
  fixed.writeBigUInt64BE(7n, 3);
  fixed.writeBigUInt64BE(9n, 11);
  fixed.writeUInt32BE(remainder.length, 19);
  return message(0x43, Buffer.concat([fixed, remainder, typeof text === 'string' ? Buffer.from(text) : text]));
}

function decodeAll(stream: Buffer): HelperMessage[] {
  const { messages, fault } = new HelperDecoder().push(stream);
  if (fault) throw fault;
  return messages;
}

function refuses(stream: Buffer, pattern: RegExp): void {
  const { fault } = new HelperDecoder().push(stream);
  assert.ok(fault instanceof HelperChannelError && pattern.test(fault.message), `${fault?.message} !~ ${pattern}`);
}

test('commands are five bytes: type and an empty length; GO carries its STARTED frame', () => {
  assert.is(encodeGo(Buffer.from('04000000050000002a75', 'hex')).toString('hex'), '010000000a' + '04000000050000002a75');
  assert.is(encodeCommand('terminate').toString('hex'), '0200000000');
  assert.is(encodeCommand('kill').toString('hex'), '0300000000');
});

test('LOG, STOP and END decode, split at every offset', () => {
  const stream = Buffer.concat([
    message(0x41, Buffer.concat([Buffer.from([4]), Buffer.from('tiocswinsz: é')])),
    message(0x42, Buffer.alloc(0)),
    end(5, 9, Buffer.from('06000000', 'hex'), 'peer sent too much'),
  ]);
  const want = decodeAll(stream);
  assert.equal(want.map((m) => m.type), ['log', 'stop', 'end']);
  assert.equal(want[0], { type: 'log', priority: 4, text: 'tiocswinsz: é' });
  const report = (want[2] as Extract<HelperMessage, { type: 'end' }>).report;
  assert.equal({ ...report, remainder: report.remainder.toString('hex') }, {
    reason: 'protocol',
    code: 9,
    bytesIn: 7n,
    bytesOut: 9n,
    remainder: '06000000',
    text: 'peer sent too much',
  });
  for (let cut = 0; cut <= stream.length; cut++) {
    const decoder = new HelperDecoder();
    const got = [...decoder.push(stream.subarray(0, cut)).messages, ...decoder.push(stream.subarray(cut)).messages];
    assert.equal(got.map((m) => m.type), ['log', 'stop', 'end'], `split at ${cut}`);
  }
});

test('untrusted: unknown types, unknown reasons, codes, oversize, bad UTF-8, a second message after END', () => {
  refuses(message(0x49, Buffer.alloc(0)), /unknown message type/);
  refuses(message(0x01, Buffer.alloc(0)), /unknown message type/); // a command, never sent by a helper
  refuses(end(8, 0, Buffer.alloc(0), ''), /unknown reason/);
  refuses(end(5, 10, Buffer.alloc(0), ''), /protocol with code 10/);
  refuses(end(1, 0, Buffer.alloc(0), Buffer.from([0xc0, 0x80])), /not UTF-8/);
  refuses(end(1, 0, Buffer.alloc(0), Buffer.from([0xed, 0xa0, 0x80])), /not UTF-8/);
  refuses(end(1, 0, Buffer.alloc(0), 'x'.repeat(1025)), /exceeds 1024/);
  refuses(end(1, 0, Buffer.alloc(65542), ''), /remainder of 65542/);
  refuses(message(0x43, Buffer.alloc(22)), /END of 22 bytes/);
  refuses(message(0x42, Buffer.alloc(1)), /STOP of 1 bytes/);
  refuses(Buffer.concat([end(1, 0, Buffer.alloc(0), ''), message(0x42, Buffer.alloc(0))]), /after END/);
  // Judged on the header alone: nothing of a huge payload is waited for.
  refuses(Buffer.from([0x41, 0xff, 0xff, 0xff, 0xff]), /message of 4294967295 bytes/);
});

test('a fault keeps the messages before it: END and junk in one read give the END and the fault, then nothing more', () => {
  const report = end(1, 0, Buffer.alloc(0), 'exited');
  const decoder = new HelperDecoder();
  const { messages, fault } = decoder.push(Buffer.concat([message(0x42, Buffer.alloc(0)), report, Buffer.from('junk!')]));
  assert.equal(messages.map((m) => m.type), ['stop', 'end']);
  assert.instance(fault, HelperChannelError);
  const later = decoder.push(message(0x42, Buffer.alloc(0)));
  assert.equal([later.messages, later.fault], [[], fault], 'the channel stays failed');
});

test('PID: the program\'s pid once, four bytes, within the kernel\'s pid range', () => {
  const pid = (value: number) => message(0x44, Buffer.from(value.toString(16).padStart(8, '0'), 'hex'));
  assert.equal(decodeAll(pid(4243)), [{ type: 'pid', pid: 4243 }]);
  assert.equal(decodeAll(pid(4 * 1024 * 1024)), [{ type: 'pid', pid: 4 * 1024 * 1024 }]);
  refuses(pid(0), /PID 0 is outside/);
  refuses(pid(1), /PID 1 is outside/);
  refuses(pid(4 * 1024 * 1024 + 1), /outside/);
  refuses(pid(0xffffffff), /outside/);
  refuses(message(0x44, Buffer.from('000010', 'hex')), /PID of 3 bytes/);
  refuses(Buffer.concat([pid(10), pid(11)]), /a second PID/);
});

test('FIGURES: six u64 figures once, named as the properties they stand for; all-ones stays as sent (unavailable)', () => {
  const payload = Buffer.alloc(48);
  [12_500_000n, 4_194_304n, 65_536n, 2n, 0n, 2n ** 64n - 1n].forEach((value, i) => payload.writeBigUInt64BE(value, 8 * i));
  const figures = message(0x45, payload);
  assert.equal(decodeAll(figures), [
    { type: 'figures', figures: { CPUUsageNSec: 12_500_000n, MemoryPeak: 4_194_304n, MemoryCurrent: 65_536n, TasksCurrent: 2n, IOReadBytes: 0n, IOWriteBytes: 2n ** 64n - 1n } },
  ]);
  refuses(message(0x45, Buffer.alloc(47)), /FIGURES of 47 bytes/);
  refuses(message(0x45, Buffer.alloc(49)), /FIGURES of 49 bytes/);
  refuses(Buffer.concat([figures, figures]), /a second FIGURES/);
  // FIGURES belongs to the end: any message after it but END is a broken helper.
  refuses(Buffer.concat([figures, message(0x42, Buffer.alloc(0))]), /STOP after FIGURES/);
  assert.equal(decodeAll(Buffer.concat([figures, end(1, 0, Buffer.alloc(0), '')])).map((m) => m.type), ['figures', 'end']);
  refuses(Buffer.concat([end(1, 0, Buffer.alloc(0), ''), figures]), /after END/);
});

test('STOP once: the helper sends one for the client\'s STOP, so a second is a broken helper (a flood of them kept a worker at a full core)', () => {
  const stop = message(0x42, Buffer.alloc(0));
  assert.equal(decodeAll(stop), [{ type: 'stop' }]);
  refuses(Buffer.concat([stop, stop]), /a second STOP/);
  const decoder = new HelperDecoder();
  assert.equal(decoder.push(stop), { messages: [{ type: 'stop' }] });
  assert.match(decoder.push(stop).fault?.message ?? '', /a second STOP/);
});

test('END text is one line of text: no control character can start a journal line of its own', () => {
  for (const text of ['worn out\nsession x.service could not be cleaned up', 'a\rb', 'bell\u0007', 'esc\u001b[2J', 'del\u007f', 'csi\u009b1m', 'nul\u0000']) {
    refuses(end(7, 0, Buffer.alloc(0), text), /END text holds a control character/);
  }
  const fine = decodeAll(end(7, 0, Buffer.alloc(0), 'cannot enter the working directory: Permission denied (é, tab-free)'));
  assert.is((fine[0] as Extract<HelperMessage, { type: 'end' }>).report.text, 'cannot enter the working directory: Permission denied (é, tab-free)');
});

test('HELLO names the helper\'s dialect, first; a helper that sends none speaks dialect 1', () => {
  const hello = message(0x40, Buffer.from([0, 2]));
  const pid = message(0x44, Buffer.from([0, 0, 0x30, 0x39]));
  const stream = Buffer.concat([hello, pid]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const decoder = new HelperDecoder();
    const first = decoder.push(stream.subarray(0, cut));
    const rest = decoder.push(stream.subarray(cut));
    assert.equal([...first.messages, ...rest.messages], [{ type: 'hello', dialect: 2 }, { type: 'pid', pid: 12345 }], `cut at ${cut}`);
    assert.is(decoder.dialect, 2);
  }
  assert.is(HELPER_DIALECT, 5, 'dialect 5: warm helpers (CLAIM, LAUNCH, CLAIMED)');
  // CLAIMED is the warm unit's to read before a session's decoder holds the channel: here it is a fault.
  assert.match(String(new HelperDecoder().push(Buffer.from([0x49, 0, 0, 0, 0])).fault?.message), 'unknown message type 0x49');
  const older = new HelperDecoder();
  assert.equal(older.push(pid).messages, [{ type: 'pid', pid: 12345 }]);
  assert.is(older.dialect, 1, 'no HELLO: the message set before it');
  // A later dialect is taken as named: what it sends beyond this set is refused message by message.
  const later = new HelperDecoder();
  assert.equal(later.push(message(0x40, Buffer.from([0, 9]))).messages, [{ type: 'hello', dialect: 9 }]);
  assert.is(later.dialect, 9);
});

test('HELLO is refused after the first message, of another size, or naming dialect 0 or 1', () => {
  refuses(Buffer.concat([message(0x44, Buffer.from([0, 0, 0x30, 0x39])), message(0x40, Buffer.from([0, 2]))]), /HELLO after the first message/);
  refuses(Buffer.concat([message(0x40, Buffer.from([0, 2])), message(0x40, Buffer.from([0, 2]))]), /HELLO after the first message/);
  refuses(message(0x40, Buffer.from([2])), /HELLO of 1 bytes/);
  refuses(message(0x40, Buffer.from([0, 0, 2])), /HELLO of 3 bytes/);
  refuses(message(0x40, Buffer.from([0, 1])), /HELLO with dialect 1/);
  refuses(message(0x40, Buffer.from([0, 0])), /HELLO with dialect 0/);
});

test.run();
