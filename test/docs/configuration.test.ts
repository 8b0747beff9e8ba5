// The configuration reference (docs/configuration.md) against the schema, so the two cannot drift:
// every setting the schema accepts is documented, every documented one is accepted, and the
// documented defaults of limits and session settings are the schema's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAccounts } from '../../src/config/accounts.ts';
import { checkSessionProperty } from '../../src/config/properties.ts';
import { DEFAULT_LIMITS, DEFAULT_SESSION, validateConfig } from '../../src/config/schema.ts';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { BUDGET_FIELDS } from '../../src/protocol/frames.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const reference = readFileSync(`${root}docs/configuration.md`, 'utf8');
const schema = readFileSync(`${root}src/config/schema.ts`, 'utf8');

/** The reference table: field → default column. */
function documented(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of reference.split('\n')) {
    const match = /^\| `([A-Za-z.]+)` \| (.*?) \|/.exec(line);
    if (match) rows.set(match[1]!, match[2]!);
  }
  return rows;
}

/** Every leaf setting the schema accepts: its `only(…)` lists, limits and session by their defaults. */
function accepted(): string[] {
  const list = (field: string) => {
    const match = new RegExp(`only\\(value, '${field}', \\[([^\\]]*)\\]\\)`).exec(schema);
    if (!match) throw new Error(`schema.ts no longer lists the ${field || 'top-level'} settings with only(value, '${field}', [...])`);
    return [...match[1]!.matchAll(/'([A-Za-z]+)'/g)].map((m) => m[1]!);
  };
  const top = list('').filter((name) => name !== 'client' && name !== 'limits' && name !== 'session');
  return [...top, ...list('client').map((n) => `client.${n}`), ...Object.keys(DEFAULT_LIMITS).map((n) => `limits.${n}`), ...Object.keys(DEFAULT_SESSION).map((n) => `session.${n}`)].sort();
}

test('every setting the schema accepts is in the reference, and nothing else', () => {
  assert.equal([...documented().keys()].sort(), accepted());
});

test('every setting the reference names anywhere, in its prose too, is one the schema accepts', () => {
  const settings = accepted();
  // session.budgets' own keys (session.budgets.timeMs…) are settings as well.
  const leaves = new Set([...settings.map((name) => name.split('.').pop()!), ...BUDGET_FIELDS]);
  // A dotted name under client, limits or session, or a bare camelCase word (the reference writes
  // settings in backticks: `session.profile`, `environmentDeny`, `socketGroup`).
  const dotted = [...reference.matchAll(/`((?:client|limits|session)\.[A-Za-z]+)`/g)].map((m) => m[1]!);
  const bare = [...reference.matchAll(/`([a-z]+[A-Z][A-Za-z]*)`/g)].map((m) => m[1]!);
  assert.ok(dotted.length > 20 && bare.length > 5, 'the reference still writes settings as it did');
  assert.equal([...new Set(dotted)].filter((name) => !settings.includes(name)), [], 'dotted names the schema does not accept');
  assert.equal([...new Set(bare)].filter((name) => !leaves.has(name)), [], 'bare names that are no setting');
});

test("the reference's example is a config the schema accepts, every one of its settings known", () => {
  const example = /```json\n([\s\S]*?)```/.exec(reference);
  assert.ok(example, 'the reference has its JSON example');
  const raw = JSON.parse(example[1]!) as Record<string, unknown>;
  const paths = (value: Record<string, unknown>, prefix = ''): string[] =>
    Object.entries(value).flatMap(([key, inner]) =>
      ['client', 'limits', 'session'].includes(key) && prefix === '' ? paths(inner as Record<string, unknown>, `${key}.`) : [`${prefix}${key}`],
    );
  const settings = accepted();
  assert.equal(paths(raw).filter((name) => !settings.includes(name)), []);
  const accounts = parseAccounts('opencode:x:1500:1500::/home/opencode:/bin/sh\n', 'opencode:x:1500:\nopencode-pty:x:1800:\n');
  const config = validateConfig(raw, accounts, checkSessionProperty);
  assert.is(config.limits.maxSessions, 16);
});

test("the reference's defaults of limits and session settings are the schema's", () => {
  const rows = documented();
  for (const [name, value] of Object.entries(DEFAULT_LIMITS)) assert.is(rows.get(`limits.${name}`), String(value), `limits.${name}`);
  for (const [name, value] of Object.entries(DEFAULT_SESSION)) {
    const shown = rows.get(`session.${name}`)!;
    if (Array.isArray(value)) assert.is(shown, value.length ? `\`${value.join(' ')}\`` : '`[]`', `session.${name}`);
    else if (typeof value === 'object') assert.is(shown, '`{}`', `session.${name}`);
    else assert.ok(shown === String(value) || shown === `\`${value}\``, `session.${name}: ${shown} vs ${value}`);
  }
});

test('operations.md explains every wire ERROR code', () => {
  const operations = readFileSync(`${root}docs/operations.md`, 'utf8');
  for (const name of Object.keys(ErrorCode)) assert.ok(operations.includes(`\`${name}\``), `${name} is explained`);
});

test.run();
