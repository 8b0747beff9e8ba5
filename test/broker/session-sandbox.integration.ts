// Profiles, network and budgets per START (protocol version 4) against the real systemd, broker, worker and
// session helper: network off and host-loopback as a program in the session meets them, the floor and the
// ceilings refusing, a budget this host does not enforce refused (NOT_ENFORCED) with nothing left running,
// and a wall clock ending the session with EXIT's `timeout`.
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent, RunResult } from '../support/agent.ts';
import { INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import { bootSupervisor, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let agent: Agent;

/** An address of the sandbox's own network namespace other than loopback (never a real one's). */
const OTHER_ADDRESS = '10.213.7.1';
const PORT = 4555;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('session-sandbox-prof', {
    session: { minProfile: 'hardened', budgets: { timeMs: { max: 600_000, default: 600_000 } } },
  }));
  const added = await sandbox.exec(['ip', 'address', 'add', `${OTHER_ADDRESS}/32`, 'dev', 'lo']);
  assert.is(added.code, 0, added.stderr);
  // A listener in the sandbox's own ("host") namespace, on every address: the agent's HTTP API stands in.
  // Each probe exits at its connect: the reset that leaves behind must not end the listener.
  await agent.background(['/usr/bin/node', '-e', `require('net').createServer((s) => { s.on('error', () => {}); s.end('hi'); }).listen(${PORT}, '0.0.0.0')`]);
  await until(async () => (await sandbox.exec(['sh', '-c', `cat /proc/net/tcp | grep -qi ':${PORT.toString(16).toUpperCase()} 00000000:0000 0A'`])).code === 0, 10_000, 'the listener');
});

test.after(async () => {
  await agent?.release().catch(() => undefined);
  await sandbox?.stop();
});

/** A shell probe: the interfaces the program sees, then one connect per address. */
function probe(addresses: string[]): string[] {
  const connect = (address: string) =>
    `/usr/bin/node -e "const s=require('net').connect(${PORT},'${address}');s.setTimeout(3000,()=>{console.log('${address}=timeout');process.exit(0)});s.on('connect',()=>{console.log('${address}=ok');process.exit(0)});s.on('error',(e)=>{console.log('${address}='+e.code);process.exit(0)})"`;
  const interfaces = `echo "ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,)"`;
  return ['/bin/sh', '-c', [interfaces, ...addresses.map(connect)].join('; ')];
}

function seen(output: string | undefined): Record<string, string> {
  return Object.fromEntries((output ?? '').split(/\r?\n/).filter((line) => line.includes('=')).map((line) => line.trim().split('=') as [string, string]));
}

test('network on (the default): the program reaches the host loopback and the other address', async () => {
  const [result] = await agent.sessions(1, probe(['127.0.0.1', OTHER_ADDRESS]));
  assert.ok(result!.ok, result!.error);
  const found = seen(result!.output);
  assert.is(found['127.0.0.1'], 'ok', result!.output);
  assert.is(found[OTHER_ADDRESS], 'ok', result!.output);
});

test('network off: the program sees only lo, and reaches neither the host loopback nor another address', async () => {
  const [result] = await agent.sessions(1, probe(['127.0.0.1', OTHER_ADDRESS]), { network: 'off' });
  assert.ok(result!.ok, result!.error);
  const found = seen(result!.output);
  assert.is(found.ifaces, 'lo,', result!.output);
  assert.is(found['127.0.0.1'], 'ECONNREFUSED', result!.output);
  // The probe answered for that address (a failure of its own, never silence), and not 'ok'.
  assert.ok(found[OTHER_ADDRESS] !== undefined && found[OTHER_ADDRESS] !== 'ok', result!.output);
});

test('network host-loopback: the host loopback is reached, the other address of the namespace is not (or the host is refused as not enforcing it)', async () => {
  const [result] = await agent.sessions(1, probe(['127.0.0.1', OTHER_ADDRESS]), { network: 'host-loopback' });
  if (!result!.ok) {
    // A manager without the BPF firewall: refused by name, never run without it.
    assert.match(result!.error!, /^NOT_ENFORCED: .*host-loopback/);
    return;
  }
  const found = seen(result!.output);
  assert.is(found['127.0.0.1'], 'ok', result!.output);
  // The probe answered for that address (a failure of its own, never silence), and not 'ok'.
  assert.ok(found[OTHER_ADDRESS] !== undefined && found[OTHER_ADDRESS] !== 'ok', result!.output);
});

test('a memory, tasks or CPU budget this host does not enforce (no controller in the unified hierarchy) is refused NOT_ENFORCED; nothing stays', async () => {
  for (const budgets of [{ memoryBytes: 64 << 20 }, { tasks: 32 }, { cpuPercent: 50 }]) {
    const [result] = await agent.sessions(1, ['/bin/echo', 'ran'], { budgets });
    assert.not.ok(result!.ok, JSON.stringify(result));
    assert.match(result!.error!, /^NOT_ENFORCED: this host does not enforce the (memory|tasks|CPU) budget/, JSON.stringify(budgets));
  }
  await until(async () => (await sessionUnits(sandbox)).length === 0, 10_000, 'no session unit left');
});

test('the floor and the ceilings: a profile below session.minProfile, an unknown one, a wall clock past the ceiling, a memory budget below the session\'s needs', async () => {
  const cases: [Parameters<Agent['sessions']>[2], RegExp][] = [
    [{ profile: 'default' }, /^PROFILE: profile default is below this server's floor/],
    [{ profile: 'paranoid' }, /^PROFILE: unknown profile "paranoid"/],
    [{ budgets: { timeMs: 600_001 } }, /^BUDGET: .*past this server's ceiling 600000/],
    [{ budgets: { memoryBytes: 1 << 20 } }, /^BUDGET: memory budget 1048576 is below what the session itself needs/],
  ];
  for (const [options, expected] of cases) {
    const [result] = await agent.sessions(1, ['/bin/echo', 'ran'], options);
    assert.not.ok(result!.ok, JSON.stringify(options));
    assert.match(result!.error!, expected);
  }
  const [hardened] = await agent.sessions(1, ['/bin/echo', 'ran'], { profile: 'hardened' });
  assert.ok(hardened!.ok, hardened!.error);
});

test('a kept session with network off: confirmed, then its rendezvous bound behind GO; it detaches, is listed and stopped as any kept session', async () => {
  const marker = `${sandbox.root}${sandbox.client.home}/kept-network.txt`;
  const argv = ['/bin/sh', '-c', `echo "$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,)" > kept-network.txt; echo ready; exec sleep 600`];
  const started = await agent.keep({ op: 'start', name: 'kept-off', argv, keepMs: 60_000, label: 'kept-off', network: 'off', read: { bytes: 5, ms: 10_000 } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'kept-off' });
  await until(() => existsSync(marker) && readFileSync(marker, 'utf8').trim() !== '', 10_000, 'the kept program\'s note');
  assert.is(readFileSync(marker, 'utf8').trim(), 'lo,');
  const listed = ((await agent.keep({ op: 'list' })).list ?? []) as { id: number; label: string }[];
  assert.ok(listed.some((one) => one.id === started.id && one.label === 'kept-off'), JSON.stringify(listed));
  const stopped = await agent.keep({ op: 'stop-session', id: started.id! });
  assert.is(stopped.error, undefined, stopped.message);
});

test('a wall clock budget ends the session: EXIT says timeout', async () => {
  const [result] = await agent.sessions(1, ['/bin/sleep', '60'], { budgets: { timeMs: 1500 } });
  assert.ok(result!.ok, result!.error);
  assert.is(result!.exit?.result, 'timeout', JSON.stringify(result));
});

test('the CLI: --max-time ends the session with status 124 and says so; --network off reaches no listener; a bad budget is a usage error', async () => {
  const cli = (...args: string[]) => agent.command<RunResult>({ run: ['/usr/bin/node', `${INSTALL_DIR}/cli.js`, 'run', '--socket', SOCKET_PATH, ...args] });
  const timed = await cli('--max-time', '1', '--', '/bin/sleep', '30');
  assert.is(timed.code, 124, JSON.stringify(timed));
  assert.match(timed.stderr, '--max-time');
  const off = await cli('--network', 'off', '--', ...probe(['127.0.0.1']));
  assert.is(off.code, 0, JSON.stringify(off));
  assert.is(seen(off.stdout)['127.0.0.1'], 'ECONNREFUSED', off.stdout);
  const refused = await cli('--max-memory', '64M', '--', '/bin/true');
  assert.is(refused.code, 125, JSON.stringify(refused));
  assert.match(refused.stderr, 'NOT_ENFORCED');
  assert.is((await cli('--max-tasks', '0', '--', '/bin/true')).code, 2);
});

test.run();
