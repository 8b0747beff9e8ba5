// Does the agent's running process have the socket's group? `systemctl show -p SupplementaryGroups`
// lists the group as soon as install's drop-in is loaded, while a process started before keeps the
// groups it started with: only its own /proc/PID/status says (FACTS: "An agent already running at
// install lacks the group until restarted").
import { readFileSync } from 'node:fs';
import { showUnit, type Runner } from './system.ts';

/** The supplementary gids of a /proc/PID/status text ("Groups:" line); undefined when it has none. */
export function groupsOfStatus(text: string): number[] | undefined {
  const line = text.split('\n').find((l) => l.startsWith('Groups:'));
  if (line === undefined) return undefined;
  return line.slice('Groups:'.length).trim().split(/\s+/).filter(Boolean).map(Number);
}

/** What to say when the agent's main process lacks the socket group, or undefined when it has it (or is not running). */
export function agentGroupWarning(unit: string, mainPid: number, groups: number[] | undefined, socketGroup: string, socketGid: number): string | undefined {
  if (mainPid <= 0 || groups === undefined || groups.includes(socketGid)) return undefined;
  return `${unit} (MainPID ${mainPid}) runs without the socket group ${socketGroup}: it started before install gave it the group; restart it (systemctl restart ${unit}) or its connects fail with EACCES`;
}

/** Reads the agent unit's MainPID and its groups (thin I/O around agentGroupWarning). */
export function checkAgentGroups(run: Runner, unit: string, socketGroup: string, socketGid: number | undefined): string | undefined {
  if (socketGid === undefined) return undefined;
  const mainPid = Number(showUnit(run, unit, ['MainPID']).MainPID ?? 0);
  if (!(mainPid > 0)) return undefined;
  let status: string;
  try {
    status = readFileSync(`/proc/${mainPid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  return agentGroupWarning(unit, mainPid, groupsOfStatus(status), socketGroup, socketGid);
}
