// Account and group ids from passwd/group files (the supervisor's accounts are local system accounts).
import { readFileSync } from 'node:fs';
import type { AccountLookup } from './schema.ts';

function records(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split(':'));
}

/**
 * Parses passwd-, group- and gshadow-format text; the first record of a name wins, as in glibc's
 * files backend. newgrp(1) and sg(1) take members and administrators from gshadow(5), and let anyone
 * who knows a set group password in: both count as having the group.
 */
export function parseAccounts(passwd: string, group: string, gshadow = ''): AccountLookup {
  const users = new Map<string, { uid: number; gid: number; home?: string }>();
  for (const [name, , uid, gid, , home] of records(passwd)) {
    if (name && !users.has(name) && /^\d+$/.test(uid ?? '') && /^\d+$/.test(gid ?? '')) {
      users.set(name, { uid: Number(uid), gid: Number(gid), ...(home?.startsWith('/') ? { home } : {}) });
    }
  }
  const groups = new Map<string, { gid: number; members: string[] }>();
  for (const [name, , gid, members] of records(group)) {
    if (name && !groups.has(name) && /^\d+$/.test(gid ?? '')) {
      groups.set(name, { gid: Number(gid), members: (members ?? '').split(',').map((member) => member.trim()).filter(Boolean) });
    }
  }
  const shadow = new Map<string, { members: string[]; passwordSet: boolean }>();
  const names = (field: string | undefined) => (field ?? '').split(',').map((member) => member.trim()).filter(Boolean);
  for (const [name, password, admins, members] of records(gshadow)) {
    if (!name || shadow.has(name)) continue;
    // "!" or "*" (or empty: members only) lock the password; anything else can be typed to newgrp.
    const passwordSet = !!password && !password.startsWith('!') && !password.startsWith('*');
    shadow.set(name, { members: [...names(admins), ...names(members)], passwordSet });
  }
  return {
    user: (name) => users.get(name),
    group: (name) => groups.get(name)?.gid,
    groupMembers: (name) => [...new Set([...(groups.get(name)?.members ?? []), ...(shadow.get(name)?.members ?? [])])],
    groupPasswordSet: (name) => shadow.get(name)?.passwordSet ?? false,
  };
}

export function systemAccounts(root = '/'): AccountLookup {
  let gshadow = '';
  try {
    gshadow = readFileSync(`${root}etc/gshadow`, 'utf8');
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOENT') throw error;
  }
  return parseAccounts(readFileSync(`${root}etc/passwd`, 'utf8'), readFileSync(`${root}etc/group`, 'utf8'), gshadow);
}
