// The attach output filter (src/cli/terminal-filter.ts) as a table: what passes, what is dropped, and that
// a sequence cut anywhere across reads is treated as if it came whole.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TerminalOutputFilter, eightBitLocale, isReportRequest } from '../../src/cli/terminal-filter.ts';

const E = '\x1b';
const C1 = (byte: number) => Buffer.from([0xc2, byte]).toString('latin1');

/** [name, input, what the terminal is given] (latin1 strings: one char a byte). */
const TABLE: [string, string, string][] = [
  ['plain text', 'hello\r\nworld', 'hello\r\nworld'],
  ['UTF-8 text with C1-valued continuation bytes', Buffer.from('é€😀ĝ', 'utf8').toString('latin1'), Buffer.from('é€😀ĝ', 'utf8').toString('latin1')],
  ['SGR, cursor moves, erase pass', `${E}[1;31mred${E}[0m${E}[2J${E}[H${E}[?25l`, `${E}[1;31mred${E}[0m${E}[2J${E}[H${E}[?25l`],
  ['charset designation and keypad mode pass', `${E}(B${E}=${E}>x`, `${E}(B${E}=${E}>x`],
  ['OSC 52 clipboard (BEL)', `a${E}]52;c;Y3VybA==\x07b`, 'ab'],
  ['OSC title (ST)', `a${E}]2;rm -rf ~${E}\\b`, 'ab'],
  ['OSC 8 hyperlink', `${E}]8;;http://x${E}\\link${E}]8;;${E}\\`, 'link'],
  ['DCS DECRQSS', `a${E}P$qm${E}\\b`, 'ab'],
  ['a BEL does not end a DCS', `a${E}P\x07$qm${E}\\b`, 'ab'],
  ['APC, PM, SOS', `${E}_G;x${E}\\1${E}^pm${E}\\2${E}Xsos${E}\\3`, '123'],
  ['UTF-8 C1 OSC and DCS', `a${C1(0x9d)}52;c;QQ==\x07b${C1(0x90)}$qm${C1(0x9c)}c`, 'abc'],
  ['raw C1 OSC ended by raw ST', `a\x9d0;t\x9cb`, 'ab'],
  ['ESC inside a string ends it and starts a sequence', `${E}]0;x${E}[1mB`, `${E}[1mB`],
  ['CAN aborts a string', `${E}]0;x\x18ok`, 'ok'],
  ['device status report', `${E}[6n${E}[5n${E}[?6nok`, 'ok'],
  ['device attributes, all three', `${E}[c${E}[0c${E}[>c${E}[=cok`, 'ok'],
  ['window reports and operations', `${E}[21t${E}[18t${E}[8;1;1t${E}[14tok`, 'ok'],
  ['DECRQM, DECREQTPARM, XTVERSION, XTSMGRAPHICS, keyboard query', `${E}[?2026$p${E}[2$p${E}[x${E}[>q${E}[?1;1S${E}[?uok`, 'ok'],
  ['DECID', `${E}Zok`, 'ok'],
  ['UTF-8 C1 CSI request dropped, other C1 CSI passes as 7-bit', `${C1(0x9b)}6n${C1(0x9b)}1m`, `${E}[1m`],
  ['a C0 inside a CSI is executed, the CSI goes on', `${E}[2\x08n${E}[1\rm`, `\x08\r${E}[1m`],
  ['a C0 after ESC is executed and the ESC still waits', `${E}\x07]52;c;QQ==\x07ok`, '\x07ok'],
  ['an overlong CSI is dropped whole', `${E}[${'0'.repeat(400)}6nok`, 'ok'],
  ['a CSI cut by ESC is dropped', `${E}[12${E}[1mx`, `${E}[1mx`],
  ['DECID in its C1 forms, raw and UTF-8', `a\x9ab${C1(0x9a)}c`, 'abc'],
  ['rarer reports: DECRQTSR, DECRQPSR, XTREPORTCOLORS, DECRQCRA, DECRQDE, DECRQLP, DECRQUPSS, XTQMODKEYS',
    `${E}[1$u${E}[1$w${E}[#R${E}[1;1;1;1;1;1*y${E}["v${E}[1'|${E}[&u${E}[?4mok`, 'ok'],
];

/** The same filter for a terminal that is not decoding UTF-8: raw 0x80-0x9f are C1 controls there. */
const EIGHT_BIT_TABLE: [string, string, string][] = [
  ['a raw C1 CSI after a would-be UTF-8 lead byte is a request, dropped', '\xe0\x9b6nok', '\xe0ok'],
  ['a raw C1 OSC after a would-be UTF-8 lead byte is dropped', '\xed\x9d52;c;QQ==\x07ok', '\xedok'],
  ['a raw DECID after a lead byte', '\xe2\x9aok', '\xe2ok'],
  ['Latin-1 text and other C1 controls pass', 'caf\xe9 \x85x', 'caf\xe9 \x85x'],
];

const CASES = [...TABLE.map((row) => [...row, false] as const), ...EIGHT_BIT_TABLE.map((row) => [...row, true] as const)];

for (const [name, input, expected, eightBit] of CASES) {
  test(`filter${eightBit ? ' (8-bit)' : ''}: ${name}`, () => {
    const make = () => new TerminalOutputFilter({ eightBit });
    const whole = make().feed(Buffer.from(input, 'latin1')).toString('latin1');
    assert.is(JSON.stringify(whole), JSON.stringify(expected));
    // Every cut into two reads, then one byte a read: the same bytes out.
    for (let cut = 1; cut < input.length; cut++) {
      const filter = make();
      const bytes = Buffer.from(input, 'latin1');
      const split = Buffer.concat([filter.feed(bytes.subarray(0, cut)), filter.feed(bytes.subarray(cut))]).toString('latin1');
      assert.is(JSON.stringify(split), JSON.stringify(expected), `cut at ${cut}`);
    }
    const filter = make();
    const bytewise = [...Buffer.from(input, 'latin1')].map((byte) => filter.feed(Buffer.from([byte])).toString('latin1')).join('');
    assert.is(JSON.stringify(bytewise), JSON.stringify(expected), 'one byte a read');
  });
}

test('isReportRequest: the CSI finals a terminal answers, and not the ones it only performs', () => {
  const csi = (text: string) => [...Buffer.from(text, 'latin1')];
  for (const request of ['6n', '?6n', 'c', '>c', '21t', '?2026$p', 'x', '>q', '?1;1S', '?u', '0;0;0;0#|', '1$u', '1$w', '#R', '1;1;1;1;1;1*y', '"v', "1'|", '&u', '?4m'])
    assert.ok(isReportRequest(csi(request)), request);
  for (const action of ['1m', 'H', '2J', '?25h', '>1u', 'S', '5q', ' q', '>4;1m', '#P', '1;1$z']) assert.not.ok(isReportRequest(csi(action)), action);
});

test('eightBitLocale: UTF-8 by LC_ALL, then LC_CTYPE, then LANG; anything else is 8-bit', () => {
  assert.not.ok(eightBitLocale({ LANG: 'en_US.UTF-8' }));
  assert.not.ok(eightBitLocale({ LC_CTYPE: 'C.utf8', LANG: 'de_DE.ISO-8859-1' }));
  assert.not.ok(eightBitLocale({ LANG: 'sr_RS.UTF-8@latin' }));
  assert.ok(eightBitLocale({ LC_ALL: 'de_DE.ISO-8859-1', LANG: 'en_US.UTF-8' }));
  assert.ok(eightBitLocale({ LANG: 'C' }));
  assert.ok(eightBitLocale({}));
});

test.run();
