// What one look at the client service means for a connection (pure): the unit's cgroup to hand on,
// a refusal that is the peer's (AUTHENTICATION, noted with its reason), or, when the look could not
// be made at all, a failure that is ours: thrown as it is, so handshakeRefusal makes it INTERNAL.
import type { Look } from '../identity/index.ts';

export type LookVerdict = { inside: true; cgroup: string } | { inside: false; reason: string };

export function lookVerdict(look: Look, service: string): LookVerdict {
  if (look.failure) throw look.failure;
  if (look.inside && look.snapshot?.state) return { inside: true, cgroup: look.snapshot.state.controlGroup };
  const cause = look.snapshot?.error ? `; its state could not be read: ${look.snapshot.error.message}` : '';
  return { inside: false, reason: `not inside ${service}${cause}` };
}
