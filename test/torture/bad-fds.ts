// Bad fds: what may travel with START (exactly one directory, the one START names) and nothing else.
import type { RawCase, FdKind } from '../support/agent-main.ts';
import { judge } from './bad-frames.ts';
import type { TortureContext } from './report.ts';

const PROTOCOL = 1;
const BAD_START = 7;
const INPUT_A = '050000000161';

interface FdCase {
  what: string;
  spec: RawCase;
  /** The code, or 'either' when accepting is as right as refusing (then the answer is noted). */
  expect: number | 'either';
  /** Where the server's socket takes no descriptors then (SO_PASSRIGHTS, Linux 6.16), the send fails with EPERM instead. */
  orKernelRefuses?: true;
}

const many = (n: number): FdKind[] => Array.from({ length: n }, () => 'cwd' as const);

export const FD_CASES: FdCase[] = [
  { what: 'START with no fd', spec: { start: { fds: [] } }, expect: BAD_START },
  { what: 'START with two fds', spec: { start: { fds: many(2) } }, expect: BAD_START },
  { what: 'START with nine fds', spec: { start: { fds: many(9) } }, expect: BAD_START },
  { what: 'START with twelve fds (control data cut short)', spec: { start: { fds: many(12) } }, expect: BAD_START },
  { what: 'START with 200 fds', spec: { start: { fds: many(200) } }, expect: BAD_START },
  { what: 'START with a regular file', spec: { start: { fds: ['file'] } }, expect: BAD_START },
  { what: 'START with a pipe', spec: { start: { fds: ['pipe'] } }, expect: BAD_START },
  { what: 'START with a socket', spec: { start: { fds: ['socket'] } }, expect: BAD_START },
  { what: 'START with an O_PATH file', spec: { start: { fds: ['opathfile'] } }, expect: BAD_START },
  { what: 'START with another directory (wrong inode)', spec: { start: { fds: ['otherdir'] } }, expect: BAD_START },
  { what: 'START with the directory and a file', spec: { start: { fds: ['cwd', 'file'] } }, expect: BAD_START },
  { what: 'START with an O_PATH fd of the directory', spec: { start: { fds: ['opath'] } }, expect: BAD_START },
  { what: 'an fd on HELLO', spec: { fdOnFirst: 'cwd' }, expect: PROTOCOL, orKernelRefuses: true },
  { what: 'an fd on INPUT before START', spec: { then: [INPUT_A], fdOnThen: 'cwd' }, expect: PROTOCOL },
  { what: 'an fd on INPUT in the data phase', spec: { start: { fds: ['cwd'] }, afterStarted: true, then: [INPUT_A], fdOnThen: 'cwd' }, expect: PROTOCOL, orKernelRefuses: true },
];

export async function runFdCases(ctx: TortureContext, rounds: number): Promise<{ passed: number; unexpected: string[]; notes: string[] }> {
  let passed = 0;
  const unexpected: string[] = [];
  const notes = new Set<string>();
  for (let round = 0; round < rounds; round += 1) {
    for (const item of FD_CASES) {
      const result = await ctx.driver.raw({ waitMs: 8000, ...item.spec });
      if (item.expect === 'either') {
        passed += 1;
        notes.add(`${item.what}: ${result.frames.includes('started') ? 'accepted' : `refused ${result.code}`}`);
      } else if (judge({ code: item.expect }, result) || (item.orKernelRefuses && result.sendRefused)) passed += 1;
      else unexpected.push(`${item.what}: expected ${item.expect}, got ${JSON.stringify(result)}`);
    }
  }
  return { passed, unexpected, notes: [...notes] };
}
