import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BootLog } from './boot-log.ts';

test('carriage returns before a newline are dropped, also when a chunk ends between them', () => {
  const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-boot-log-'));
  try {
    const log = new BootLog(join(dir, 'boot.log'));
    for (const chunk of ['one\r\n', 'two\r', '\n', 'three\r\r', '\r\nfour', ' bare\rfive\r\n']) log.append(chunk);
    log.append('six\r');
    assert.is(log.text, 'one\ntwo\nthree\nfour bare\rfive\nsix', 'a trailing carriage return waits for its chunk');
    log.finish();
    assert.is(log.text, 'one\ntwo\nthree\nfour bare\rfive\nsix\r', 'and is kept at the end');
    assert.is(readFileSync(join(dir, 'boot.log'), 'utf8'), log.text);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
