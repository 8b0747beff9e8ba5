// sd_notify(3) for the supervisor's own units: readiness, status and watchdog, a no-op outside systemd.
import { native } from '../native/index.ts';
import { SystemdError } from './errors.ts';

export interface NotifyEnvironment {
  NOTIFY_SOCKET?: string | undefined;
  WATCHDOG_USEC?: string | undefined;
  WATCHDOG_PID?: string | undefined;
}

/** Sends one datagram; the native addon's sdNotify by default (Node has no Unix datagram sockets). */
export type NotifySender = (socketPath: string, state: string) => void;

const nativeSender: NotifySender = (socketPath, state) => native().sdNotify(socketPath, state);

/**
 * Sends `state` ("READY=1", "STATUS=…", newline-separated assignments) to $NOTIFY_SOCKET. Returns
 * false, sending nothing, when the variable is unset, as sd_notify() does outside a notify unit.
 */
export function notify(state: string, env: NotifyEnvironment = process.env, send: NotifySender = nativeSender): boolean {
  const socketPath = env.NOTIFY_SOCKET;
  if (socketPath === undefined || socketPath === '') return false;
  // sd_notify accepts a path or an abstract name ("@…"); anything else is a misconfiguration.
  if (!socketPath.startsWith('/') && !socketPath.startsWith('@')) {
    throw new SystemdError('NOTIFY_INVALID', `NOTIFY_SOCKET ${JSON.stringify(socketPath)} is neither a path nor an abstract name`);
  }
  send(socketPath, state);
  return true;
}

export function ready(env?: NotifyEnvironment, send?: NotifySender): boolean {
  return notify('READY=1', env, send);
}

export function stopping(env?: NotifyEnvironment, send?: NotifySender): boolean {
  return notify('STOPPING=1', env, send);
}

/** STATUS= is one line: a newline would start a new assignment, so it becomes a space. */
export function status(text: string, env?: NotifyEnvironment, send?: NotifySender): boolean {
  return notify(`STATUS=${text.replace(/[\r\n]+/g, ' ')}`, env, send);
}

export function watchdog(env?: NotifyEnvironment, send?: NotifySender): boolean {
  return notify('WATCHDOG=1', env, send);
}

/**
 * The watchdog interval systemd expects pings within, in milliseconds, or undefined when it is off
 * or meant for another process (sd_watchdog_enabled(3)); ping at half of it, as that page advises.
 */
export function watchdogIntervalMs(env: NotifyEnvironment = process.env, pid: number = process.pid): number | undefined {
  const usec = env.WATCHDOG_USEC;
  if (usec === undefined || !/^[0-9]{1,19}$/.test(usec)) return undefined;
  const micros = BigInt(usec);
  if (micros === 0n) return undefined;
  const owner = env.WATCHDOG_PID;
  if (owner !== undefined && owner !== '' && owner !== String(pid)) return undefined;
  // Round up: a sub-millisecond interval must not become 0 ("off").
  return Number((micros + 999n) / 1000n);
}
