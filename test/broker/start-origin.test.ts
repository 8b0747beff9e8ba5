// A START's origin (start-origin.ts): the MainPID by the look and the pidfd, another process of the unit,
// or unknown without a client service or when the look fails.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startOrigin } from '../../src/broker/start-origin.ts';
import { SessionOrigin } from '../../src/protocol/index.ts';

const snapshot = (error?: Error) => ({ state: undefined, error, readStartTicks: 10, readAt: 0 });
const service = (main: boolean, error?: Error) => ({ isMainPid: async () => ({ main, snapshot: snapshot(error) }) });
const peer = { pid: 42, startTicks: 5 };

test('MAIN_PID only when the look names it and the pidfd is still that process; else UNIT_PROCESS or UNKNOWN', async () => {
  assert.is(await startOrigin(service(true), peer, () => true), SessionOrigin.MAIN_PID);
  assert.is(await startOrigin(service(true), peer, () => false), SessionOrigin.UNIT_PROCESS, 'the pidfd names another process now');
  assert.is(await startOrigin(service(false), peer, () => true), SessionOrigin.UNIT_PROCESS);
  assert.is(await startOrigin(service(false, new Error('bus')), peer, () => true), SessionOrigin.UNKNOWN, 'a failed look says nothing');
  assert.is(await startOrigin(undefined, peer, () => true), SessionOrigin.UNKNOWN, 'no client service');
  assert.is(await startOrigin({ isMainPid: async () => Promise.reject(new Error('x')) }, peer, () => true), SessionOrigin.UNKNOWN);
});

test.run();
