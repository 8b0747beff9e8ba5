// The START directory's path as root names it (session-start.ts cwdOf): the kernel's name of the
// descriptor, or '' when it is not UTF-8 (decoded, its bytes would become U+FFFD and name a sibling).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cwdOf } from '../../src/worker/session-start.ts';

test('a UTF-8 name is the path; a name that is not UTF-8 is no path at all', () => {
  const base = mkdtempSync(join(tmpdir(), 'cwd-of-'));
  try {
    const plain = join(base, 'My Project: €');
    mkdirSync(plain);
    const fd = openSync(plain, constants.O_RDONLY | constants.O_DIRECTORY);
    assert.is(cwdOf(fd), plain);
    closeSync(fd);
    const raw = Buffer.concat([Buffer.from(`${base}/bad-`), Buffer.from([0xff, 0xfe])]);
    mkdirSync(raw);
    mkdirSync(join(base, 'bad-\ufffd\ufffd')); // the sibling a decoded name would point at
    const bad = openSync(raw, constants.O_RDONLY | constants.O_DIRECTORY);
    assert.is(cwdOf(bad), '');
    closeSync(bad);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test.run();
