// Account and group ids from passwd/group files (the supervisor's accounts are local system accounts).
import { readFileSync } from 'node:fs';
import type { AccountLookup } from './schema.ts';

function records(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split(':'));
}

/** Parses passwd- and group-format text; the first record of a name wins, as in glibc's files backend. */
export function parseAccounts(passwd: string, group: string): AccountLookup {
  const users = new Map<string, { uid: number; gid: number }>();
  for (const [name, , uid, gid] of records(passwd)) {
    if (name && !users.has(name) && /^\d+$/.test(uid ?? '') && /^\d+$/.test(gid ?? '')) {
      users.set(name, { uid: Number(uid), gid: Number(gid) });
    }
  }
  const groups = new Map<string, { gid: number; members: string[] }>();
  for (const [name, , gid, members] of records(group)) {
    if (name && !groups.has(name) && /^\d+$/.test(gid ?? '')) {
      groups.set(name, { gid: Number(gid), members: (members ?? '').split(',').map((member) => member.trim()).filter(Boolean) });
    }
  }
  return {
    user: (name) => users.get(name),
    group: (name) => groups.get(name)?.gid,
    groupMembers: (name) => groups.get(name)?.members ?? [],
  };
}

export function systemAccounts(root = '/'): AccountLookup {
  return parseAccounts(readFileSync(`${root}etc/passwd`, 'utf8'), readFileSync(`${root}etc/group`, 'utf8'));
}
