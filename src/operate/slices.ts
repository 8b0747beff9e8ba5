// Which of the slices an install recorded may be stopped: a slice stops every unit inside it, so only
// one that holds nothing but units install created (the broker, sessions, and slices of the same list).
import { BROKER_UNIT } from './layout.ts';

export interface SliceState {
  /** ActiveState is active (an inactive or unknown slice needs no stop). */
  active: boolean;
  /** Its direct members, units and slices (systemd's SliceOf=). */
  members: string[];
}

export interface SliceDecision {
  stop: string[];
  /** A recorded slice left running, with the units in it that install did not create. */
  kept: { slice: string; foreign: string[] }[];
}

/** Units install creates: the broker's instances and the session units (by the configured prefix). */
export function isOwnUnit(unit: string, unitPrefix: string): boolean {
  const template = BROKER_UNIT.slice(0, BROKER_UNIT.indexOf('@') + 1);
  return unit.startsWith(template) || (unit.startsWith(`${unitPrefix}session-`) && unit.endsWith('.service'));
}

export function slicesToStop(slices: readonly string[], state: (slice: string) => SliceState, unitPrefix: string): SliceDecision {
  const listed = new Set(slices);
  const foreignOf = new Map<string, string[]>();
  // Depth-first: a listed child slice that holds a foreign unit makes its parent hold one too.
  const foreign = (slice: string, seen: Set<string>): string[] => {
    const known = foreignOf.get(slice);
    if (known) return known;
    const found: string[] = [];
    for (const member of state(slice).members) {
      if (isOwnUnit(member, unitPrefix)) continue;
      if (listed.has(member) && !seen.has(member)) {
        if (foreign(member, new Set([...seen, member])).length) found.push(member);
        continue;
      }
      found.push(member);
    }
    foreignOf.set(slice, found);
    return found;
  };
  const decision: SliceDecision = { stop: [], kept: [] };
  for (const slice of slices) {
    if (!state(slice).active) continue;
    const held = foreign(slice, new Set([slice]));
    if (held.length) decision.kept.push({ slice, foreign: held });
    else decision.stop.push(slice);
  }
  return decision;
}
