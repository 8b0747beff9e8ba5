// START's version 4 fields from a caller's options: the profile, the network mode and the budgets.
import type { Budgets, FrameOf, NetworkMode } from '../protocol/index.ts';

/** START's version 4 fields, undefined when none is asked (an older server is then fine). */
export function sandboxOf(profile: string | undefined, network: NetworkMode | undefined, budgets: Budgets | undefined): Pick<FrameOf<'start'>, 'profile' | 'network' | 'budgets'> | undefined {
  const asked = budgets && Object.values(budgets).some((value) => value !== undefined);
  if (profile === undefined && network === undefined && !asked) return undefined;
  return { profile: profile ?? '', ...(network === undefined ? {} : { network }), budgets: budgets ?? {} };
}
