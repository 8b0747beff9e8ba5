// The session's environment: TERM from the config plus only the allowlisted names a client asked for.
import type { EnvEntry } from '../protocol/frames.ts';

export function sessionEnvironment(requested: EnvEntry[], allowlist: readonly string[], term: string): Record<string, string> {
  const allowed = new Set(allowlist);
  const environment: Record<string, string> = {};
  for (const { name, value } of requested) {
    if (allowed.has(name) && name !== 'TERM') environment[name] = value;
  }
  // The client's terminal type is honoured only when it is a plain terminfo name.
  const requestedTerm = requested.find((entry) => entry.name === 'TERM')?.value;
  environment.TERM = requestedTerm && /^[A-Za-z0-9._+-]{1,64}$/.test(requestedTerm) ? requestedTerm : term;
  return environment;
}
