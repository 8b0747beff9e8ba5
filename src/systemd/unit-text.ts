// What may reach a transient unit's file as text (pure). systemd writes every transient setting into
// /run/systemd/transient/<unit>.service and reads that file back on daemon-reload, so a string it
// writes unescaped is unit-file syntax, not data.
import { SystemdError } from './errors.ts';
import type { PropertyTuple } from './unit-limits.ts';

/**
 * Properties whose strings systemd escapes itself when it writes them (systemd 252,
 * src/core/dbus-execute.c): ExecStart arguments and Environment entries are escaped ("\n", "\\",
 * "%%", octal for control bytes) and quoted in the transient file. The integration test
 * (test/worker/unit-text.integration.ts) proves both on a real systemd: newlines, "%" and "\" in them
 * survive a daemon-reload as data, and no argument splits, joins or becomes a new setting.
 * Every other string (Description, User, Group, Slice… through bus_set_transient_string in
 * dbus-util.c, which escapes only "%") is written as it is: it must hold no line break, no control
 * byte and no backslash (a trailing "\" would continue the line into the next setting).
 */
export const SELF_ESCAPED_PROPERTIES: ReadonlySet<string> = new Set(['ExecStart', 'Environment']);

/** Control bytes (C0, DEL, and the C1 range as UTF-16 code units), and the backslash. */
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\\\u2028\u2029]/;

function unsafe(name: string, value: string): SystemdError {
  return new SystemdError('PROPERTY_INVALID', `${name}: ${JSON.stringify(value)} holds a byte that would be unit-file syntax`);
}

/** Every string inside a property value, however deeply nested (arrays and structs are arrays here). */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  return [];
}

/** Refuses any property whose strings systemd would write into the unit file unescaped and that could break out of its line. */
export function checkUnitFileText(tuples: readonly PropertyTuple[]): void {
  for (const [name, , value] of tuples) {
    if (SELF_ESCAPED_PROPERTIES.has(name)) continue;
    for (const text of stringsOf(value)) if (UNSAFE_TEXT.test(text)) throw unsafe(name, text);
  }
}

/** How long a program name may be in a Description. */
export const PROGRAM_LABEL_MAX = 64;

/**
 * A label for a client's program that is safe anywhere in a unit file: the last path component,
 * every byte outside [A-Za-z0-9._+-] replaced by "_", at most PROGRAM_LABEL_MAX bytes. Used in the
 * session unit's Description, so `systemctl status` still says what runs without a client byte
 * ever becoming unit-file syntax.
 */
export function programLabel(argv0: string): string {
  const base = argv0.slice(argv0.lastIndexOf('/') + 1);
  const label = base.replace(/[^A-Za-z0-9._+-]/g, '_').slice(0, PROGRAM_LABEL_MAX);
  return label === '' || /^\.+$/.test(label) ? 'program' : label;
}
