// Review of the worker's side of kept sessions (issue 29): root's keep deadline. A failing test here is
// an open finding of the review, not a broken test.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { KeptSide } from '../../src/worker/kept-side.ts';
import { parseAccounts } from '../../src/config/accounts.ts';
import { validateConfig } from '../../src/config/schema.ts';

test('REVIEW-7: a keep deadline the config allows (session.maxKeepMs up to 2^32-1) is not cut to 1 ms by setTimeout\'s 2^31-1 bound', async () => {
  // The config takes it: an operator may keep sessions 30 days.
  const accounts = parseAccounts(
  'root:x:0:0:root:/root:/bin/bash\nagent:x:1500:1500::/home/agent:/bin/sh\nrootgroup:x:1600:0::/:/bin/sh\n',
  'root:x:0:\nagent:x:1500:\nother:x:1700:\nopencode-pty:x:1800:\nwithagent:x:1900:other,agent\n',
);
  const config = validateConfig({ client: { user: 'agent', service: 'agent.service' }, session: { maxKeepMs: 30 * 86_400_000 } }, accounts, () => undefined);
  const keepMs = config.session.maxKeepMs;
  assert.is(keepMs, 30 * 86_400_000);
  const [ours, theirs] = native().socketpair();
  const side = new KeptSide(new FdSocket(ours), {
    facts: { sessionId: 1, keepMs, label: '', program: 'sh', cwd: '/', startedAtMs: Date.now(), rows: 24, cols: 80, programPid: 2, mainPid: 3 },
    link: undefined,
    writeTimeoutMs: 1000,
    detached: () => undefined,
    attached: () => undefined,
    log: () => undefined,
  });
  let fired = false;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => void warnings.push(warning.name);
  process.on('warning', onWarning);
  try {
    side.arm(() => void (fired = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.is(fired, false, `a ${keepMs} ms keep deadline fired within 100 ms (${warnings.join(', ')})`);
  } finally {
    process.off('warning', onWarning);
    side.closeAll();
    closeQuietly(theirs);
  }
});

test.run();
