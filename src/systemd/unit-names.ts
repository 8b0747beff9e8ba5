// Session unit names and their D-Bus object paths: pure, so name rules are tested without a bus.
import { SystemdError } from './errors.ts';

export const DEFAULT_UNIT_PREFIX = 'opencode-pty-';

/** The broker's own unit (units/supervisor@.service as units/supervisor.socket starts it): the installer
 * names it, and a worker checks its cgroup is this unit's before it trusts kept sessions to outlive it. */
export const BROKER_UNIT = 'opencode-pty-supervisor@broker.service';

/** systemd's UNIT_NAME_MAX is 256 including the terminating NUL (src/basic/unit-name.h). */
const UNIT_NAME_MAX = 255;
/** Fewer random bytes would make collisions between live sessions plausible. */
const MIN_RANDOM_BYTES = 8;
/** Long enough for any sensible deployment, short enough to leave room for the random part. */
const MAX_PREFIX = 64;

/**
 * A prefix starts with an alphanumeric and uses only characters systemd accepts in a unit name
 * (unit-name.c VALID_CHARS) minus "\\" (escape sequences) and "@" (template instances), so it can
 * never form a glob or a template when used in ListUnitsByPatterns.
 */
const PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9:_.-]*$/;

export function validatePrefix(prefix: string): string {
  if (prefix.length > MAX_PREFIX || !PREFIX_PATTERN.test(prefix)) {
    throw new SystemdError('INVALID_UNIT_NAME', `unit prefix ${JSON.stringify(prefix)} is not allowed`);
  }
  return prefix;
}

/** `${prefix}session-${hex}.service` from caller-supplied random bytes (pure: the caller owns the randomness). */
export function unitNameFor(randomBytes: Buffer, prefix: string = DEFAULT_UNIT_PREFIX): string {
  validatePrefix(prefix);
  if (randomBytes.length < MIN_RANDOM_BYTES) {
    throw new SystemdError('INVALID_UNIT_NAME', `a unit name needs at least ${MIN_RANDOM_BYTES} random bytes`);
  }
  const name = `${prefix}session-${randomBytes.toString('hex')}.service`;
  if (name.length > UNIT_NAME_MAX) {
    throw new SystemdError('INVALID_UNIT_NAME', `unit name is longer than ${UNIT_NAME_MAX} characters`);
  }
  return name;
}

/** True for a name `unitNameFor` could have produced with this prefix. */
export function isSessionUnitName(name: string, prefix: string = DEFAULT_UNIT_PREFIX): boolean {
  return (
    name.length <= UNIT_NAME_MAX &&
    name.startsWith(prefix) &&
    /^session-[0-9a-f]+\.service$/.test(name.slice(prefix.length))
  );
}

/** Refuses names that are not a plain service name we could have made (guards every bus call by name). */
export function validateUnitName(name: string): string {
  if (name.length > UNIT_NAME_MAX || !/^[A-Za-z0-9:_.@\\-]+\.service$/.test(name)) {
    throw new SystemdError('INVALID_UNIT_NAME', `unit name ${JSON.stringify(name)} is not a plain service name`);
  }
  return name;
}

/**
 * The object path systemd gives a unit: "/org/freedesktop/systemd1/unit/" plus the name escaped as
 * bus_label_escape() does (src/basic/bus-label.c): letters kept, digits kept except first,
 * every other byte as "_" and two lower-case hex digits.
 */
export function unitObjectPath(name: string): string {
  const bytes = Buffer.from(name, 'utf8');
  if (bytes.length === 0) return '/org/freedesktop/systemd1/unit/_';
  let label = '';
  bytes.forEach((byte, index) => {
    const letter = (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
    const digit = byte >= 0x30 && byte <= 0x39;
    label += letter || (digit && index > 0) ? String.fromCharCode(byte) : `_${byte.toString(16).padStart(2, '0')}`;
  });
  return `/org/freedesktop/systemd1/unit/${label}`;
}

/** Hex digits of a unit's random part that make its session id: 52 bits, below 2^53 (a JavaScript number). */
const SESSION_ID_DIGITS = 13;

/**
 * A kept session's id (protocol version 3): the first 13 hex digits of its unit's random part as a
 * number (< 2^52). Derived from the name alone, so it is the same for every broker and worker that
 * sees the unit, across restarts. Undefined for a name `unitNameFor` could not have made, or for the
 * id 0 (never valid on the wire; its start draws again: session-start.ts).
 */
export function sessionIdOf(name: string, prefix: string = DEFAULT_UNIT_PREFIX): number | undefined {
  if (!isSessionUnitName(name, prefix)) return undefined;
  const hex = name.slice(prefix.length + 'session-'.length, -'.service'.length);
  if (hex.length < 2 * MIN_RANDOM_BYTES) return undefined;
  const id = parseInt(hex.slice(0, SESSION_ID_DIGITS), 16);
  return id === 0 ? undefined : id;
}

/** A warm unit's Description= (src/worker/warm-plan.ts): no START's bytes are known when it is asked for;
 * the operator's commands tell an idle warm unit from a session by it and by its helper's lack of a child. */
export const WARM_UNIT_DESCRIPTION = 'opencode-pty warm session';
