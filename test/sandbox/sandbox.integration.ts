// The sandbox itself: boots a real systemd, runs things as the test accounts, and leaves the host as it was.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import dbus from 'dbus-next';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bootSandbox, sandboxUnavailable, type Sandbox } from './index.ts';
import { FIRST_STAGE } from './launch.ts';
import { hostPidOf, namespaceInode, processesInPidNamespace, processesOfNamespace } from './namespaces.ts';

const unavailable = sandboxUnavailable();
let sandbox: Sandbox;

function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function mountCount(): number {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).length;
}

test.before(async () => {
  if (!unavailable) sandbox = await bootSandbox({ name: 'opencode-pty-sandbox-test' });
});

test.after(async () => {
  await sandbox?.stop();
});

if (unavailable) {
  // CI must never pass by skipping the suites that prove anything about systemd.
  if (process.env.CI) test('the sandbox can run here', () => assert.unreachable(`sandbox unavailable: ${unavailable}`));
  else test.skip(`sandbox unavailable: ${unavailable}`, () => {});
} else {
  test('boots to a working system bus, reachable from the host', async () => {
    const bus = dbus.sessionBus({ busAddress: sandbox.busAddress });
    try {
      const systemd = await withDeadline(bus.getProxyObject('org.freedesktop.systemd1', '/org/freedesktop/systemd1'), 5000, 'introspect');
      const properties = systemd.getInterface('org.freedesktop.DBus.Properties');
      const state = await properties.Get('org.freedesktop.systemd1.Manager', 'SystemState');
      assert.is(state.value, 'running');
      const virtualization = await properties.Get('org.freedesktop.systemd1.Manager', 'Virtualization');
      assert.is(virtualization.value, 'container-other');
    } finally {
      bus.disconnect();
    }
    assert.is(sandbox.root, `/proc/${sandbox.pid1}/root`);
    assert.ok(namespaceInode(sandbox.pid1, 'pid') !== namespaceInode('self', 'pid'));
    assert.ok(namespaceInode(sandbox.pid1, 'mnt') !== namespaceInode('self', 'mnt'));
  });

  test('runs commands as root, the client and the other account', async () => {
    const root = await sandbox.exec(['id', '-u']);
    assert.is(root.stdout.trim(), '0');
    const client = await sandbox.exec(['id'], { as: 'client' });
    assert.is(client.code, 0);
    assert.match(client.stdout, /^uid=4242\(ocpty-client\) gid=4242\(ocpty-client\) groups=4242\(ocpty-client\)$/m);
    const other = await sandbox.exec(['id'], { as: 'other' });
    assert.match(other.stdout, /^uid=4243\(ocpty-other\) gid=4243\(ocpty-other\) groups=4243\(ocpty-other\)$/m);
    const regrouped = await sandbox.exec(['id'], { as: 'client', gid: 4243 });
    assert.match(regrouped.stdout, /^uid=4242\(ocpty-client\) gid=4243\(ocpty-other\) groups=4243\(ocpty-other\)$/m);
    const where = await sandbox.exec(['sh', '-c', 'pwd; echo "$HOME $GREETING"; cat'], {
      as: 'client',
      env: { GREETING: 'hello' },
      input: 'from stdin',
    });
    assert.is(where.stdout, '/home/ocpty-client\n/home/ocpty-client hello\nfrom stdin');
    const elsewhere = await sandbox.exec(['pwd'], { cwd: '/opt/opencode-pty' });
    assert.is(elsewhere.stdout, '/opt/opencode-pty\n');
    const failing = await sandbox.exec(['sh', '-c', 'echo oops >&2; exit 3']);
    assert.equal([failing.code, failing.stderr], [3, 'oops\n']);
  });

  test('exec() kills a command that runs past its timeout', async () => {
    let nsPid = 0;
    try {
      await sandbox.exec(['sh', '-c', 'echo $$; exec sleep 1000'], { timeoutMs: 300 });
      assert.unreachable('sleep returned');
    } catch (error) {
      const { code, result } = error as { code?: string; result?: { stdout: string } };
      assert.is(code, 'SANDBOX_EXEC_TIMEOUT');
      nsPid = Number(result?.stdout.trim());
    }
    assert.ok(nsPid > 1);
    // The death signal is sent as nsenter exits; the probe (the process's state) decides, the deadline bounds it.
    const deadline = Date.now() + 5000;
    let state: string | undefined;
    do {
      const hostPid = hostPidOf(sandbox.pidNamespace, nsPid);
      state = hostPid === undefined ? undefined : /^State:\s+(\S)/m.exec(readFileSync(`/proc/${hostPid}/status`, 'utf8'))?.[1];
      if (state === undefined || state === 'Z') break;
      await delay(10);
    } while (Date.now() < deadline);
    assert.ok(state === undefined || state === 'Z', `sleep is still in state ${state}`);
  });

  test('a transient unit started from the host over the bus runs as the client', async () => {
    const bus = dbus.sessionBus({ busAddress: sandbox.busAddress });
    try {
      const systemd = await bus.getProxyObject('org.freedesktop.systemd1', '/org/freedesktop/systemd1');
      const manager = systemd.getInterface('org.freedesktop.systemd1.Manager');
      await manager.Subscribe();
      // Listen before starting: the job may be done before StartTransientUnit's reply arrives.
      const removed = new Map<string, string>();
      let onRemoved: () => void = () => {};
      manager.on('JobRemoved', (_id: number, job: string, _unit: string, result: string) => {
        removed.set(job, result);
        onRemoved();
      });
      const { Variant } = dbus;
      const job: string = await manager.StartTransientUnit(
        'sandbox-t1.service',
        'fail',
        [
          ['Type', new Variant('s', 'oneshot')],
          ['ExecStart', new Variant('a(sasb)', [['/usr/bin/id', ['/usr/bin/id', '-u'], false]])],
          ['User', new Variant('s', 'ocpty-client')],
          ['RemainAfterExit', new Variant('b', true)],
          ['StandardOutput', new Variant('s', 'journal')],
        ],
        [],
      );
      const result = await withDeadline(
        new Promise<string>((resolve) => {
          onRemoved = () => removed.has(job) && resolve(removed.get(job)!);
          onRemoved();
        }),
        10_000,
        'JobRemoved',
      );
      assert.is(result, 'done');
      const unitPath: string = await manager.GetUnit('sandbox-t1.service');
      const unit = await bus.getProxyObject('org.freedesktop.systemd1', unitPath);
      const properties = unit.getInterface('org.freedesktop.DBus.Properties');
      assert.is((await properties.Get('org.freedesktop.systemd1.Service', 'ExecMainCode')).value, 1); // CLD_EXITED
      assert.is((await properties.Get('org.freedesktop.systemd1.Service', 'ExecMainStatus')).value, 0);
      assert.is((await properties.Get('org.freedesktop.systemd1.Unit', 'ActiveState')).value, 'active');
    } finally {
      bus.disconnect();
    }
    assert.is(await sandbox.journal('sandbox-t1.service'), '4242\n');
    assert.match(await sandbox.journal(), /4242/);
  });

  test('installs files and units, and starts a long-running client service', async () => {
    await sandbox.install([
      { content: '#!/bin/sh\necho installed "$@"\n', to: '/opt/opencode-pty/bin/hello', mode: 0o755 },
      { from: FIRST_STAGE, to: '/opt/opencode-pty/first-stage.sh' },
    ]);
    const hello = await sandbox.exec(['/opt/opencode-pty/bin/hello', 'ok'], { as: 'other' });
    assert.is(hello.stdout, 'installed ok\n');
    const mode = await sandbox.exec(['stat', '-c', '%a %U', '/opt/opencode-pty/bin/hello', '/opt/opencode-pty/first-stage.sh']);
    assert.is(mode.stdout, '755 root\n644 root\n');

    await sandbox.installUnits({
      'sandbox-echo.service': '[Service]\nType=oneshot\nUser=ocpty-other\nExecStart=/opt/opencode-pty/bin/hello from-a-unit\n',
    });
    const start = await sandbox.systemctl('start', 'sandbox-echo.service');
    assert.is(start.code, 0, start.stderr);
    assert.is(await sandbox.journal('sandbox-echo.service'), 'installed from-a-unit\n');

    const agent = await sandbox.startClientService('ocpty-agent.service', ['/usr/bin/sleep', 'infinity']);
    assert.is(agent.controlGroup, '/system.slice/ocpty-agent.service');
    assert.ok(agent.mainPid > 1);
    const status = readFileSync(`/proc/${agent.hostPid}/status`, 'utf8');
    assert.match(status, /^Uid:\s+4242\s+4242\s+4242\s+4242$/m);
    // The agent service alone holds the socket's group (the account itself does not).
    assert.match(status, /^Groups:.*\b4240\b/m);
    assert.match(status, new RegExp(`^NSpid:\\s+${agent.hostPid}\\s+${agent.mainPid}$`, 'm'));
    const stop = await sandbox.systemctl('stop', 'ocpty-agent.service');
    assert.is(stop.code, 0);
  });

  test('the run directory is shared with the host', async () => {
    writeFileSync(join(sandbox.runDir, 'from-host'), 'hi');
    const seen = await sandbox.exec(['cat', '/run/opencode-pty/from-host']);
    assert.is(seen.stdout, 'hi');
    await sandbox.exec(['sh', '-c', 'echo back >/run/opencode-pty/from-inside']);
    assert.is(readFileSync(join(sandbox.runDir, 'from-inside'), 'utf8'), 'back\n');
  });

  test("PID 1's console output lands in the boot log file", () => {
    const text = sandbox.bootLog();
    assert.match(text, /sandbox first stage: starting systemd/);
    assert.match(text, /systemd 252/);
    assert.match(text, /Startup finished/);
    assert.not.match(text, /\r/);
    assert.is(readFileSync(sandbox.bootLogPath, 'utf8'), text);
  });

  test('stop() ends every process of the sandbox, removes its traces, and is idempotent', async () => {
    assert.ok(processesInPidNamespace(sandbox.pidNamespace).length >= 3); // systemd, journald, dbus-daemon
    await sandbox.stop(); // Runs the host check: it throws on any difference.
    // Another sandbox booting now may get the freed inode number: processesOfNamespace tells them apart by their PID 1.
    assert.equal(processesOfNamespace(sandbox.identity), []);
    assert.not.ok(existsSync(`/proc/${sandbox.pid1}/root/run/dbus`));
    await sandbox.stop();
    try {
      await sandbox.exec(['true']);
      assert.unreachable('exec after stop');
    } catch (error) {
      assert.is((error as { code?: string }).code, 'SANDBOX_STOPPED');
    }
    assert.match(readFileSync(sandbox.bootLogPath, 'utf8'), /Exiting container/);
  });
}

// The first stage must check before it does anything: run it where it must refuse, with the
// same arguments and a state directory that holds nothing, so a broken check would fail late
// ("no prepared state") instead of mounting anything.
test('the first stage refuses to run outside new namespaces, and does nothing', () => {
  const host = { mnt: String(namespaceInode('self', 'mnt')), pid: String(namespaceInode('self', 'pid')) };
  const state = mkdtempSync(join(tmpdir(), 'opencode-pty-sandbox-refusal-'));
  try {
    const args = [FIRST_STAGE, 'opencode-pty-refusal', host.mnt, host.pid, state, state];
    const cases: [string[], RegExp][] = [[['/bin/sh', ...args], /refusing to run: not PID 1/]];
    // New namespaces need root.
    if (!unavailable) {
      cases.push(
      [['unshare', '--pid', '--fork', '--', '/bin/sh', ...args], /refusing to run: still in the host's mount namespace/],
      [
        ['unshare', '--pid', '--fork', '--mount', '--propagation', 'shared', '--mount-proc', '--', '/bin/sh', ...args],
        /refusing to run: a mount is still shared with the host/,
      ],
      );
    }
    for (const [argv, message] of cases) {
      const mountsBefore = mountCount();
      const run = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      assert.is(run.status, 64, `${argv.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      assert.is(run.stdout, '');
      assert.is(mountCount(), mountsBefore);
      assert.equal(readdirSync(state), []);
      assert.is(statSync(state).nlink, 2);
    }
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
});

test.run();
