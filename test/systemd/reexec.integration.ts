// After systemd re-executes itself (systemctl daemon-reexec, which a systemd package upgrade runs),
// PID 1 reconnects to the system bus under a new unique name: a unit's end must still be seen.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { UnitManager } from '../../src/systemd/unit-manager.ts';
import { unitNameFor } from '../../src/systemd/unit-names.ts';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../sandbox/index.ts';

let sandbox: Sandbox;
let manager: UnitManager;

async function start(argv: string[]): Promise<{ name: string; output: number }> {
  const name = unitNameFor(randomBytes(8), 'ocp-reexec-');
  const cwdFd = openSync(`${sandbox.root}${sandbox.client.home}`, constants.O_RDONLY | constants.O_DIRECTORY);
  const [output, unitEnd] = native().socketpair();
  try {
    await manager.startSession(name, {
      description: 'reexec test',
      helperPath: argv[0]!,
      helperArgs: argv.slice(1),
      user: sandbox.client.user,
      group: sandbox.client.group,
      cwdFd,
      stdoutFd: unitEnd,
      environment: { TERM: 'dumb' },
      stopTimeoutSec: 5,
    });
    return { name, output };
  } finally {
    closeSync(cwdFd);
    closeSync(unitEnd);
  }
}

const unavailable = sandboxUnavailable();
if (unavailable) {
  test.skip('real systemd suites need the sandbox', () => undefined);
} else {
  test.before(async () => {
    sandbox = await bootSandbox({ name: 'ocp-reexec' });
    manager = await UnitManager.connect(sandbox.busAddress);
  });
  test.after(async () => {
    manager?.close();
    await sandbox?.stop();
  });

  test('a unit that ends after a daemon-reexec: its exit is seen', async () => {
    const before = await sandbox.exec(['busctl', 'status', '--no-pager', 'org.freedesktop.systemd1']);
    const session = await start(['/bin/sh', '-c', 'sleep 4; exit 7']);
    const reexec = await sandbox.systemctl('daemon-reexec');
    assert.is(reexec.code, 0, reexec.stderr);
    const after = await sandbox.exec(['busctl', 'status', '--no-pager', 'org.freedesktop.systemd1']);
    const owner = (text: string) => /UniqueName=(\S+)/.exec(text)?.[1];
    console.log(`# owner before ${owner(before.stdout)}, after ${owner(after.stdout)}`);
    assert.equal(await manager.waitForExit(session.name, { timeoutMs: 20_000 }), { code: 1, status: 7, result: 'exit-code' });
    await manager.stopAndWait(session.name, 10_000);
    closeSync(session.output);
  });
}
test.run();
