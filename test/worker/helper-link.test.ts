// The worker's end of the helper's control channel over a real socketpair: commands out, messages in,
// a stray descriptor refused, and everything the kernel holds read on demand (EAGAIN ends it).
import { closeSync, openSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import type { HelperMessage } from '../../src/control/helper-channel.ts';
import { HelperLink } from '../../src/worker/helper-link.ts';

function pair() {
  const [ours, theirs] = native().socketpair();
  const messages: HelperMessage[] = [];
  const failures: Error[] = [];
  const link = new HelperLink(ours, { message: (m) => messages.push(m), failed: (e) => failures.push(e) });
  return { link, theirs, messages, failures };
}

const log = (text: string) => {
  const body = Buffer.concat([Buffer.from([6]), Buffer.from(text)]);
  const header = Buffer.from([0x41, 0, 0, 0, 0]);
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
};

test('commands reach the helper end as five bytes each, GO with the STARTED frame it carries', () => {
  const { link, theirs } = pair();
  assert.ok(link.sendGo(Buffer.from('0400000005', 'hex')));
  assert.ok(link.send('kill'));
  const buffer = Buffer.alloc(32);
  const got = native().recvmsg(theirs, buffer, 0, 32, 1);
  assert.is(buffer.subarray(0, got!.bytes).toString('hex'), '0100000005' + '0400000005' + '0300000000');
  link.close();
  closeSync(theirs);
  assert.not.ok(link.send('terminate'), 'nothing is sent once closed');
});

test('a message that closes the link ends the batch: what came after it in the same read is not acted on', () => {
  const [ours, theirs] = native().socketpair();
  const messages: HelperMessage[] = [];
  const link: HelperLink = new HelperLink(ours, { message: (m) => (messages.push(m), m.type === 'log' && m.text === 'close' ? link.close() : undefined), failed: () => undefined });
  const stream = Buffer.concat([log('close'), log('after')]);
  native().sendmsg(theirs, stream, 0, stream.length);
  link.readAvailable();
  assert.equal(messages, [{ type: 'log', priority: 6, text: 'close' }]);
  closeSync(theirs);
});

test('preface: bytes read before the link held the channel are taken as read here, before what follows', () => {
  const { link, theirs, messages } = pair();
  native().sendmsg(theirs, log('next'), 0, log('next').length);
  link.preface(Buffer.from('40000000020004', 'hex'));
  link.readAvailable();
  assert.equal(messages, [{ type: 'hello', dialect: 4 }, { type: 'log', priority: 6, text: 'next' }]);
  assert.is(link.dialect, 4);
  link.close();
  closeSync(theirs);
});

test('readAvailable takes what the kernel holds now, without waiting for EOF', () => {
  const { link, theirs, messages } = pair();
  const stream = Buffer.concat([log('one'), log('two')]);
  native().sendmsg(theirs, stream, 0, stream.length);
  link.readAvailable();
  assert.equal(messages, [
    { type: 'log', priority: 6, text: 'one' },
    { type: 'log', priority: 6, text: 'two' },
  ]);
  link.readAvailable(); // EAGAIN now: returns at once
  link.close();
  closeSync(theirs);
});

test('a descriptor from the helper is closed and fails the channel', () => {
  const { link, theirs, messages, failures } = pair();
  const fd = openSync('/dev/null', 'r');
  const data = log('with fd');
  native().sendmsg(theirs, data, 0, data.length, [fd]);
  closeSync(fd);
  link.readAvailable();
  assert.is(messages.length, 0);
  assert.is(failures.length, 1);
  assert.match(failures[0]!.message, 'descriptor');
  link.close();
  closeSync(theirs);
});

test('a malformed message fails the channel and nothing more is read', () => {
  const { link, theirs, messages, failures } = pair();
  const bad = Buffer.concat([Buffer.from([0x99, 0, 0, 0, 0]), log('after')]);
  native().sendmsg(theirs, bad, 0, bad.length);
  link.readAvailable();
  link.readAvailable();
  assert.is(failures.length, 1);
  assert.is(messages.length, 0);
  link.close();
  closeSync(theirs);
});

test('an END report followed by junk in the same read: the report is delivered, then the channel fails', () => {
  const { link, theirs, messages, failures } = pair();
  // END: reason exit, code 0, bytes in 3, bytes out 4, no remainder, text "exited".
  const body = Buffer.concat([Buffer.from('01' + '0000' + '0000000000000003' + '0000000000000004' + '00000000', 'hex'), Buffer.from('exited')]);
  const header = Buffer.from([0x43, 0, 0, 0, 0]);
  header.writeUInt32BE(body.length, 1);
  const stream = Buffer.concat([log('last words'), header, body, Buffer.from([0x99, 0, 0, 0, 0])]);
  native().sendmsg(theirs, stream, 0, stream.length);
  link.readAvailable();
  assert.equal(messages.map((m) => m.type), ['log', 'end']);
  assert.is((messages[1] as Extract<HelperMessage, { type: 'end' }>).report.text, 'exited');
  assert.is(failures.length, 1);
  assert.match(failures[0]!.message, 'after END');
  link.close();
  closeSync(theirs);
});

test('more LOG messages than a helper ever sends: the first MAX_LOGS reach the journal, then the channel fails', () => {
  const { link, theirs, messages, failures } = pair();
  const stream = Buffer.concat(Array.from({ length: 200 }, (_, i) => log(`line ${i}`)));
  native().sendmsg(theirs, stream, 0, stream.length);
  link.readAvailable();
  assert.is(messages.length, 64);
  assert.is(failures.length, 1);
  assert.match(failures[0]!.message, 'more than 64 LOG');
  link.close();
  closeSync(theirs);
});

test.run();
