// The cgroup a kept session's helper accepts its next control channel from (RENDEZVOUS's payload,
// native/session/keep-rendezvous.c): the broker's unit's, where the broker and its workers run. A uid-0
// process with no capability can reach the rendezvous socket; one outside that cgroup is refused there.
import { HelperLimits } from '../control/index.ts';

/**
 * The cgroup v2 path in `/proc/self/cgroup` text (its "0::" line), when its last component is `brokerUnit`
 * and the helper would take it (absolute, within RENDEZVOUS's bound, no "." or ".." component); else why not.
 */
export function supervisorCgroup(procSelfCgroup: string, brokerUnit: string): { cgroup: string } | { why: string } {
  const line = procSelfCgroup.split('\n').find((entry) => entry.startsWith('0::'));
  if (line === undefined) return { why: 'no cgroup v2 line in /proc/self/cgroup' };
  const cgroup = line.slice(3);
  const parts = cgroup.split('/');
  if (!cgroup.startsWith('/') || parts.some((part) => part === '.' || part === '..') || cgroup.includes('\0')) return { why: `an unusable cgroup path ${JSON.stringify(cgroup)}` };
  if (Buffer.byteLength(cgroup) > HelperLimits.MAX_RENDEZVOUS_CGROUP) return { why: 'a cgroup path longer than the helper takes' };
  if (parts.at(-1) !== brokerUnit) return { why: `not running in ${brokerUnit} (cgroup ${cgroup})` };
  return { cgroup };
}
