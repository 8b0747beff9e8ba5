// What a worker inherits: nothing systemd meant for the broker alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { workerCommand, workerEnvironment } from '../../src/broker/worker-pool.ts';
import { DEFAULT_LIMITS, DEFAULT_SESSION, type Config } from '../../src/config/schema.ts';

const config: Config = {
  client: { user: 'agent', group: 'agent', uid: 1500, gid: 1500, service: 'agent.service' },
  requireClientUnit: true,
  socketPath: '/run/opencode-pty/supervisor.sock',
  unitPrefix: 'opencode-pty-',
  helperPath: '',
  limits: DEFAULT_LIMITS,
  session: DEFAULT_SESSION,
};

test('LISTEN_*, NOTIFY_SOCKET and WATCHDOG_* are not passed on; the config and bus address are', () => {
  const env = workerEnvironment(
    {
      PATH: '/usr/bin',
      LISTEN_PID: '1',
      LISTEN_FDS: '1',
      LISTEN_FDNAMES: 'x',
      NOTIFY_SOCKET: '/run/systemd/notify',
      WATCHDOG_USEC: '1000',
      WATCHDOG_PID: '1',
      INVOCATION_ID: 'abc',
    },
    config,
    'unix:path=/x',
  );
  assert.equal(Object.keys(env).sort(), ['INVOCATION_ID', 'OPENCODE_PTY_BUS_ADDRESS', 'OPENCODE_PTY_WORKER_CONFIG', 'PATH']);
  assert.equal(JSON.parse(env.OPENCODE_PTY_WORKER_CONFIG!), config);
  assert.is(env.OPENCODE_PTY_BUS_ADDRESS, 'unix:path=/x');
  assert.not.ok('OPENCODE_PTY_BUS_ADDRESS' in workerEnvironment({ OPENCODE_PTY_BUS_ADDRESS: 'stale' }, config, undefined));
});

test('in a checkout the worker runs from its TypeScript entry through tsx', () => {
  const command = workerCommand();
  assert.equal(command.slice(0, 2), ['--import', 'tsx']);
  assert.match(command[2]!, /src\/worker\/main\.ts$/);
});

test.run();
