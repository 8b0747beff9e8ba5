// The configuration reference (docs/configuration.md) against the schema, so the two cannot drift:
// every setting the schema accepts is documented, every documented one is accepted, and the
// documented defaults of limits and session settings are the schema's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, DEFAULT_SESSION } from '../../src/config/schema.ts';
import { ErrorCode } from '../../src/protocol/constants.ts';

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
