// Bad peers, version 3: who may LIST, ATTACH and STOP_SESSION. Only the agent's MainPID and root
// (docs/security.md "Who may list and attach"): a child of the agent unit is NOT_PERMITTED whatever it
// names (a live session or none), the client account outside the unit and another account are refused
// at authentication, and root lists and observes but starts nothing. A malformed request is judged as a
// frame first (PROTOCOL) whoever sends it.
import { SOCKET_GROUP } from '../sandbox/index.ts';
import type { RawCase, RawResult } from '../support/agent-main.ts';
import { frame, judge, type Expect } from './bad-frames.ts';
import { HELLO_V3, attach, list, stopSession } from './bad-kept-frames.ts';
import { outside } from './bad-peers.ts';
import type { TortureContext } from './report.ts';

const PROTOCOL = 1;
const AUTHENTICATION = 3;
const NO_SESSION = 12;
const NOT_PERMITTED = 13;

const hex = (bytes: Buffer) => bytes.toString('hex');
const v3 = (bytes: Buffer[], extra: Partial<RawCase> = {}): RawCase => ({ first: HELLO_V3, then: bytes.map(hex), waitMs: 8000, ...extra });

export async function runKeptPeerCases(ctx: TortureContext): Promise<{ passed: number; unexpected: string[]; notes: string[] }> {
  const { driver, sandbox } = ctx;
  const out = { passed: 0, unexpected: [] as string[], notes: [] as string[] };
  const started = await driver.keep({ op: 'start', name: 'torture-kept-peer-target', argv: ['sh', '-c', 'printf ready; exec sleep 100000'], keepMs: 600_000, read: { bytes: 5 } });
  if (started.error) throw new Error(`the target session did not start: ${started.error} ${started.message}`);
  await driver.keep({ op: 'detach', name: 'torture-kept-peer-target' });
  const id = BigInt(started.id!);
  const absent = id ^ 0x5a5a5n;
  const check = (what: string, expect: Expect, result: RawResult) => {
    if (judge(expect, result)) out.passed += 1;
    else out.unexpected.push(`kept peers: ${what}: expected ${JSON.stringify(expect)}, got ${JSON.stringify(result)}`);
  };
  const socketGroup = [SOCKET_GROUP.gid];
  try {
    // A child of the agent unit (a plugin, a tool): inside the unit, not its MainPID.
    const fromChild: [string, RawCase, Expect][] = [
      ['LIST', v3([list()]), { code: NOT_PERMITTED }],
      ['LIST twice after one WELCOME', v3([Buffer.concat([list(), list()])]), { code: NOT_PERMITTED }],
      ['ATTACH control of the live session', v3([attach(id, 0n, 1)]), { code: NOT_PERMITTED }],
      ['ATTACH observe of the live session from now', v3([attach(id, 0xffff_ffff_ffff_ffffn, 2)]), { code: NOT_PERMITTED }],
      ['ATTACH of an id that does not exist', v3([attach(absent, 0n, 2)]), { code: NOT_PERMITTED }],
      ['STOP_SESSION of the live session', v3([stopSession(id)]), { code: NOT_PERMITTED }],
      ['STOP_SESSION of an id that does not exist', v3([stopSession(absent)]), { code: NOT_PERMITTED }],
      ['ATTACH of id 0 (malformed: judged as a frame first)', v3([attach(0n, 0n, 2)]), { code: PROTOCOL }],
      ['LIST carrying an fd', v3([list()], { fdOnThen: 'cwd' }), { code: PROTOCOL }],
    ];
    for (const [what, spec, expect] of fromChild) check(`a child of the agent unit: ${what}`, expect, await driver.asChild<RawResult>({ raw: spec }));
    // Outside the agent unit: refused at authentication, before any request is read.
    const strangers = [
      { what: 'the client account outside the agent unit', who: { as: 'client' as const, groups: socketGroup } },
      { what: 'another account', who: { as: 'other' as const, groups: socketGroup } },
      { what: 'the client uid with another gid', who: { uid: sandbox.client.uid, gid: sandbox.other.gid, groups: socketGroup } },
    ];
    for (const { what, who } of strangers) {
      check(`${what}: LIST`, { code: AUTHENTICATION }, await outside(ctx, who, { raw: v3([list()]) }));
      check(`${what}: ATTACH of the live session`, { code: AUTHENTICATION }, await outside(ctx, who, { raw: v3([attach(id, 0n, 1)]) }));
    }
    // Root, the operator: lists, observes, attaches by id; never starts; and only in version 3.
    const asRoot: [string, RawCase, Expect][] = [
      ['LIST', v3([list()], { untilFrame: 'sessions' }), { answered: 'sessions' }],
      ['ATTACH observe of the live session', v3([attach(id, 0n, 2)], { untilFrame: 'attached' }), { answered: 'attached' }],
      ['ATTACH of an id that does not exist', v3([attach(absent, 0n, 2)]), { code: NO_SESSION }],
      ['STOP_SESSION of an id that does not exist', v3([stopSession(absent)]), { code: NO_SESSION }],
      ['START', v3([frame(0x03, Buffer.alloc(40))]), { code: NOT_PERMITTED }],
      ['HELLO of versions 1..2', { first: hex(Buffer.from('01000000084f43505400010002', 'hex')), halfClose: true }, { code: AUTHENTICATION }],
    ];
    for (const [what, spec, expect] of asRoot) check(`root: ${what}`, expect, await outside(ctx, {}, { raw: spec }));
    // None of it reached the session.
    const listed = ((await driver.keep({ op: 'list' })).list ?? []) as { id: number; next: number }[];
    const entry = listed.find((one) => one.id === started.id);
    if (entry?.next === 5) out.passed += 1;
    else out.unexpected.push(`kept peers: the target afterwards: ${JSON.stringify(entry ?? 'gone')}`);
    out.notes.push(`version 3 requests from a child of the agent (${fromChild.length}), from outside the unit (${strangers.length * 2}) and from root (${asRoot.length}) answered as documented`);
  } finally {
    await driver.keep({ op: 'stop-session', id: started.id! });
  }
  return out;
}
