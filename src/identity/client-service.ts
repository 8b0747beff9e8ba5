// What the broker knows of the client service: its state as read over D-Bus, which may make an
// identity decision faster but never refuses a peer that a fresh look would admit.
//
// Every negative answer ("not inside the unit", "not its MainPID") is only final when it comes from
// a read that began after the peer's process started: a restarted agent's new MainPID is always
// younger than any older read, so it always gets a fresh look. Reads are single-flight: any number
// of waiting peers share one D-Bus call, so a flood costs at most one call in flight.
import { readFileSync } from 'node:fs';
import { native } from '../native/index.ts';
import type { ServiceState } from '../systemd/index.ts';
import { cgroupWithin } from './peer-recheck.ts';

/** One read of the service's state; `error` keeps why a read failed (never taken as "not live"). */
export interface ServiceSnapshot {
  state: ServiceState | undefined;
  error: Error | undefined;
  /** Clock ticks since boot (USER_HZ) when the read began, floored: the read saw everything older. */
  readStartTicks: number;
  /** Milliseconds (Date.now) when the read completed, for the freshness window. */
  readAt: number;
}

export type Membership = 'inside' | 'outside' | 'unknown';

/** An answer about a cgroup; `provisional` when it came from a snapshot past its freshness window,
 * `failure` when a confirmation could not be looked for at all (no answer, the supervisor's fault). */
export interface Look {
  inside: boolean;
  snapshot?: ServiceSnapshot;
  provisional?: boolean;
  failure?: Error;
}

/** A running instance of the client service whose state can be trusted for identity decisions. */
export function serviceIsLive(state: ServiceState | undefined, service: string): state is ServiceState {
  return (
    state !== undefined &&
    state.activeState === 'active' &&
    state.subState === 'running' &&
    state.controlGroup.endsWith(`/${service}`) &&
    state.invocationId.length === 16
  );
}

/**
 * Whether `cgroup` can be inside the service at all, decided without D-Bus (pure). A unit's cgroup
 * is named after the unit (systemd.unit(5) "ControlGroup"), so a path with no component equal to the
 * service's name is outside whatever the service's state; this is what keeps a flood from another
 * unit (a session, say) off the bus entirely. A path that names it is checked against the live state.
 */
export function plausiblyInside(cgroup: string, service: string): boolean {
  return cgroup.split('/').includes(service);
}

/** Membership against one snapshot (pure): 'unknown' when only a newer look could say. */
export function membership(cgroup: string, snapshot: ServiceSnapshot | undefined, service: string, peerStartTicks: number): Membership {
  if (!plausiblyInside(cgroup, service)) return 'outside';
  const state = snapshot?.state;
  if (serviceIsLive(state, service) && cgroupWithin(cgroup, state.controlGroup)) return 'inside';
  return snapshot && isNewerThan(snapshot, peerStartTicks) && !snapshot.error ? 'outside' : 'unknown';
}

/** Whether the peer is the service's MainPID by one snapshot (pure): 'unknown' when only a newer look could say. */
export function mainPidAnswer(pid: number, snapshot: ServiceSnapshot | undefined, service: string, peerStartTicks: number): boolean | 'unknown' {
  const state = snapshot?.state;
  if (serviceIsLive(state, service) && state.mainPid === pid) return true;
  return snapshot && isNewerThan(snapshot, peerStartTicks) && !snapshot.error ? false : 'unknown';
}

/** A read that began in a later clock tick than the peer's start saw the peer's process already there. */
function isNewerThan(snapshot: ServiceSnapshot, peerStartTicks: number): boolean {
  return snapshot.readStartTicks > peerStartTicks;
}

export interface ClientServiceOptions {
  /** How long a snapshot serves positive answers and the cheap checks. */
  ttlMs?: number;
  now?: () => number;
  ticks?: () => number;
}

export class ClientService {
  readonly service: string;
  #read: () => Promise<ServiceState>;
  #ttlMs: number;
  #now: () => number;
  #ticks: () => number;
  /** The latest successful read. */
  #latest: ServiceSnapshot | undefined;
  /** The latest read, failed or not: a failed read newer than a peer answers it (with its error). */
  #lastRead: ServiceSnapshot | undefined;
  #inFlight: { startTicks: number; done: Promise<ServiceSnapshot> } | undefined;
  /** Reads started so far (for tests and the journal). */
  reads = 0;

  constructor(service: string, read: () => Promise<ServiceState>, options: ClientServiceOptions = {}) {
    this.service = service;
    this.#read = read;
    this.#ttlMs = options.ttlMs ?? 1000;
    this.#now = options.now ?? Date.now;
    this.#ticks = options.ticks ?? ticksNowFloor;
  }

  /**
   * The latest snapshot if it is still within the freshness window, else a new read. Past half the
   * window the next read starts in the background, so a steady stream of connections never waits
   * for one (a flood delays the reply by a turn of the broker's loop: up to 19 ms at p90, measured).
   */
  async current(): Promise<ServiceSnapshot> {
    const latest = this.#latest;
    const age = latest ? this.#now() - latest.readAt : Number.POSITIVE_INFINITY;
    if (latest && age < this.#ttlMs) {
      if (age >= this.#ttlMs / 2 && !this.#inFlight) void this.#start().done;
      return latest;
    }
    return this.#start().done;
  }

  /** A snapshot whose read began after the peer's process started (see isNewerThan). */
  async newerThan(peerStartTicks: number): Promise<ServiceSnapshot> {
    for (;;) {
      if (this.#lastRead && isNewerThan(this.#lastRead, peerStartTicks)) return this.#lastRead;
      const flight = this.#inFlight;
      if (flight && flight.startTicks > peerStartTicks) return flight.done;
      // A read in flight that began too early: let it finish, then start one of our own.
      if (flight) await flight.done;
      else if (this.#ticks() <= peerStartTicks) await nextTick();
      else await this.#start().done;
    }
  }

  /** The latest successful read, as it is (no read is started): the accept path's hint of the MainPID,
   * and the epoch its refusal memo is kept against (src/broker/refusal-memo.ts). */
  get latest(): ServiceSnapshot | undefined {
    return this.#latest;
  }

  /** The live service's MainPID by the latest read, if that read found it live. */
  get latestMainPid(): number | undefined {
    const state = this.#latest?.state;
    return serviceIsLive(state, this.service) ? state.mainPid : undefined;
  }

  /** Starts a read in the background when the latest is past half its freshness window (as current()
   * does), so what is decided from `latest` without waiting stays within about one window of now. */
  freshen(): void {
    const latest = this.#latest;
    if (this.#inFlight || (latest && this.#now() - latest.readAt < this.#ttlMs / 2)) return;
    try {
      void this.#start().done;
    } catch {
      // The clock could not be read (EMFILE): the next connection's full checks will say so.
    }
  }

  /** Whether `cgroup` could be inside the service at all (no read; see plausiblyInside). */
  plausible(cgroup: string): boolean {
    return plausiblyInside(cgroup, this.service);
  }

  /** Is `cgroup` inside the live service? A negative answer always comes from a look newer than the peer. */
  async contains(cgroup: string, peerStartTicks: number): Promise<Look> {
    if (!plausiblyInside(cgroup, this.service)) return { inside: false };
    let snapshot = await this.current();
    let answer = membership(cgroup, snapshot, this.service, peerStartTicks);
    if (answer === 'unknown') {
      snapshot = await this.newerThan(peerStartTicks);
      answer = membership(cgroup, snapshot, this.service, peerStartTicks);
    }
    return { inside: answer === 'inside', snapshot };
  }

  /**
   * contains(), except that a snapshot past its freshness window that puts `cgroup` inside answers at
   * once, as provisional: `confirmed` is then the fresh look's answer, and nothing may be started for
   * the peer before it. The cgroup was read through the peer's pidfd just now, and only processes
   * of the unit are in its cgroup, so what the old read cannot vouch for is only that the service is
   * still live; the handshake goes on meanwhile (WELCOME does not wait for a D-Bus round trip).
   */
  async containsProvisionally(cgroup: string, peerStartTicks: number): Promise<Look & { confirmed: Promise<Look> }> {
    const latest = this.#latest;
    const stale = latest !== undefined && this.#now() - latest.readAt >= this.#ttlMs;
    if (stale && membership(cgroup, latest, this.service, peerStartTicks) === 'inside') {
      // Never rejects (a caller may drop it): a look that could not be made (the clock unreadable:
      // EMFILE) is the supervisor's failure, carried as `failure` for the caller to throw (INTERNAL).
      const confirmed = this.contains(cgroup, peerStartTicks).catch(
        (cause: unknown): Look => ({ inside: false, failure: cause instanceof Error ? cause : new Error(String(cause)) }),
      );
      return { inside: true, snapshot: latest, provisional: true, confirmed };
    }
    const look = await this.contains(cgroup, peerStartTicks);
    return { ...look, confirmed: Promise.resolve(look) };
  }

  /** Is `pid` the live service's MainPID? A negative answer always comes from a look newer than the peer. */
  async isMainPid(pid: number, peerStartTicks: number): Promise<{ main: boolean; snapshot: ServiceSnapshot }> {
    let snapshot = await this.current();
    let answer = mainPidAnswer(pid, snapshot, this.service, peerStartTicks);
    if (answer === 'unknown') {
      snapshot = await this.newerThan(peerStartTicks);
      answer = mainPidAnswer(pid, snapshot, this.service, peerStartTicks);
    }
    return { main: answer === true, snapshot };
  }

  /**
   * Is `pid` the live service's MainPID by a look that began after this call (a fresh read): what a
   * LIST, ATTACH or STOP_SESSION must be sure of (src/broker/principals.ts), where an older snapshot
   * could name a MainPID that has since been replaced (a read begun in this very clock tick counts:
   * at most 10 ms old). The caller confirms through the peer's pidfd that the process it asked about
   * is the same one still alive.
   */
  async isMainPidNow(pid: number): Promise<{ main: boolean; snapshot: ServiceSnapshot }> {
    const snapshot = await this.newerThan(this.#ticks() - 1);
    return { main: mainPidAnswer(pid, snapshot, this.service, Number.NEGATIVE_INFINITY) === true, snapshot };
  }

  #start(): { startTicks: number; done: Promise<ServiceSnapshot> } {
    if (this.#inFlight) return this.#inFlight;
    const startTicks = this.#ticks();
    this.reads += 1;
    const done = this.#read().then(
      (state) => ({ state, error: undefined }),
      (error: unknown) => ({ state: undefined, error: error instanceof Error ? error : new Error(String(error)) }),
    ).then((result) => {
      const snapshot: ServiceSnapshot = { ...result, readStartTicks: startTicks, readAt: this.#now() };
      // A failed read answers its own callers (with its error) but never replaces a good snapshot.
      if (!snapshot.error) this.#latest = snapshot;
      this.#lastRead = snapshot;
      this.#inFlight = undefined;
      return snapshot;
    });
    this.#inFlight = { startTicks, done };
    return this.#inFlight;
  }
}

/** Now in /proc/PID/stat start-time units (USER_HZ, 100 on Linux), floored. */
export function ticksNowFloor(): number {
  return Math.floor(uptimeSeconds() * 100);
}

function uptimeSeconds(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

/** Waits for the clock to enter the next USER_HZ tick (at most 10 ms). */
function nextTick(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 10));
}

/** The peer's cgroup now, through its pidfd (confirmed to be the same live process). */
export function pidfdCgroupNow(pidfd: number): string {
  return native().pidfdCgroup(pidfd);
}
