// Who may ask what of the supervisor, as a set of principals per client service (pure). Today: the
// client service's MainPID (its agent), root (the operator), and any other process of the unit (it
// may only START). Each principal says which requests it may make and which kept sessions it sees;
// one more (a front the supervisor starts for opencode's persistent terminals) is one more entry.
// docs/security.md "Who may list and attach".
import { ErrorCode, type ErrorCodeValue } from '../protocol/index.ts';

/** The requests of protocol version 3, each instead of the others after WELCOME. */
export type Request = 'start' | 'list' | 'attach' | 'stop-session';

/** What the broker knows of a peer when its request is whole. */
export interface PeerFacts {
  uid: number;
  /** The one account the supervisor serves (config client.uid). */
  clientUid: number;
  /** The peer is the client service's MainPID, by its pidfd and a look at the service newer than the
   * request (ClientService.isMainPidNow); false when that was not asked (principalNeedsMainPid). */
  mainPid: boolean;
  /** The peer holds CAP_SYS_PTRACE in its effective set (read through its pidfd: peer-capabilities.ts);
   * false when that was not asked (principalNeedsPtrace). */
  ptrace: boolean;
}

export interface Principal {
  name: 'root' | 'main-pid' | 'unit-process';
  matches(facts: PeerFacts): boolean;
  may: ReadonlySet<Request>;
  /** Which kept sessions it lists and reaches: every one (the operator), or its client service's. */
  sees: 'every' | 'service';
}

const KEPT_REQUESTS: ReadonlySet<Request> = new Set(['list', 'attach', 'stop-session']);

/** First match wins, in this order. */
export const PRINCIPALS: readonly Principal[] = [
  // The operator: lists, attaches and stops any kept session; starts none (a session runs as the
  // client's account, which root has no business choosing for it). Its own small admission (accept-gate.ts).
  // Root that could ptrace the program anyway (CAP_SYS_PTRACE), not any uid-0 process: a root service
  // with its capabilities dropped must not read or type into the agent's terminals.
  { name: 'root', matches: (facts) => facts.uid === 0 && facts.ptrace, may: KEPT_REQUESTS, sees: 'every' },
  // The agent itself: plugins and tools it runs are other processes of its unit, and must not read
  // or type into its terminals (issue 29 "Who may").
  { name: 'main-pid', matches: (facts) => facts.uid === facts.clientUid && facts.mainPid, may: new Set<Request>(['start', ...KEPT_REQUESTS]), sees: 'service' },
  { name: 'unit-process', matches: (facts) => facts.uid === facts.clientUid, may: new Set<Request>(['start']), sees: 'service' },
];

export type Decision = { allowed: true; principal: Principal } | { allowed: false; code: ErrorCodeValue; message: string };

export const ROOT_START_REFUSED = 'root may list, attach and stop kept sessions, not start them';
export const KEPT_REFUSED = "only the agent's main process (its service's MainPID) or root may list, attach or stop kept sessions";
export const ROOT_PTRACE_REFUSED = 'root may list, attach and stop kept sessions only with CAP_SYS_PTRACE in its effective capabilities (what could ptrace the program anyway)';

/** Whether deciding `request` for a peer of `uid` needs the MainPID look (a D-Bus read): only a
 * client-account peer asking for a kept session does. */
export function principalNeedsMainPid(request: Request, uid: number, clientUid: number): boolean {
  return uid === clientUid && uid !== 0 && KEPT_REQUESTS.has(request);
}

/** Whether deciding `request` for a peer of `uid` needs its capabilities read: only root asking for a kept session. */
export function principalNeedsPtrace(request: Request, uid: number): boolean {
  return uid === 0 && KEPT_REQUESTS.has(request);
}

/** May this peer make this request? NOT_PERMITTED with the reason when not. */
export function decide(request: Request, facts: PeerFacts, principals: readonly Principal[] = PRINCIPALS): Decision {
  const principal = principals.find((candidate) => candidate.matches(facts));
  if (principal?.may.has(request)) return { allowed: true, principal };
  const message = facts.uid === 0 ? (request === 'start' ? ROOT_START_REFUSED : ROOT_PTRACE_REFUSED) : KEPT_REFUSED;
  return { allowed: false, code: ErrorCode.NOT_PERMITTED, message };
}
