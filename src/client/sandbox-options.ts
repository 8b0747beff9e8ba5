// START's version 4 fields from a caller's options: the profile, the network mode and the budgets.
import { BUDGET_FIELDS, NETWORK_MODES, checkBudget, checkProfileName, isProtocolError, type Budgets, type FrameOf, type NetworkMode } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';

/** START's version 4 options (docs/client.md "Profiles, network and budgets"). */
export interface SandboxOptions {
  /** Version 4: the session's profile ('default' < 'hardened' < 'workspace'); the server's floor when absent.
   * One below the floor, unknown or not offered is refused (PROFILE), never changed. */
  profile?: string;
  /** Version 4: 'off' (its own loopback only), 'host-loopback' or 'on'; the server's default when absent. Above
   * the server's ceiling: NETWORK. */
  network?: NetworkMode;
  /** Version 4: wall clock (ms), memory (bytes), tasks and CPU (% of one CPU), each a positive integer; past the
   * server's ceiling: BUDGET; one this host cannot enforce: NOT_ENFORCED. */
  budgets?: Budgets;
}

/** START's version 4 fields, undefined when none is asked (an older server is then fine). */
export function sandboxOf(profile: string | undefined, network: NetworkMode | undefined, budgets: Budgets | undefined): Pick<FrameOf<'start'>, 'profile' | 'network' | 'budgets'> | undefined {
  const asked = budgets && Object.values(budgets).some((value) => value !== undefined);
  if (profile === undefined && network === undefined && !asked) return undefined;
  return { profile: profile ?? '', ...(network === undefined ? {} : { network }), budgets: budgets ?? {} };
}

/** A caller's `profile`, `network` and `budgets` (node-pty's spawn options), checked before anything is sent:
 * INVALID_ARGUMENT for a bad one (0, negative, fractional or past 2^53-1; an unknown mode or malformed name). */
export function checkSandboxOptions(given: { profile?: unknown; network?: unknown; budgets?: unknown }): { profile?: string; network?: NetworkMode; budgets?: Budgets } {
  const out: { profile?: string; network?: NetworkMode; budgets?: Budgets } = {};
  try {
    if (given.profile !== undefined) {
      if (typeof given.profile !== 'string' || given.profile === '') throw new ClientError('INVALID_ARGUMENT', 'profile must be a profile name');
      checkProfileName(given.profile);
      out.profile = given.profile;
    }
    if (given.network !== undefined) {
      if (!(NETWORK_MODES as readonly unknown[]).includes(given.network)) throw new ClientError('INVALID_ARGUMENT', `network must be ${NETWORK_MODES.join(', ')}, not ${String(given.network)}`);
      out.network = given.network as NetworkMode;
    }
    if (given.budgets !== undefined) {
      const budgets = given.budgets as Record<string, unknown>;
      if (typeof budgets !== 'object' || budgets === null || Array.isArray(budgets)) throw new ClientError('INVALID_ARGUMENT', 'budgets must be an object');
      for (const key of Object.keys(budgets)) {
        if (!(BUDGET_FIELDS as readonly string[]).includes(key)) throw new ClientError('INVALID_ARGUMENT', `unknown budget ${key} (${BUDGET_FIELDS.join(', ')})`);
        if (budgets[key] !== undefined) checkBudget(key, budgets[key]);
      }
      out.budgets = { ...(budgets as Budgets) };
    }
  } catch (error) {
    if (isProtocolError(error)) throw new ClientError('INVALID_ARGUMENT', error.message, { cause: error });
    throw error;
  }
  return out;
}
