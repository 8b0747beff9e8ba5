// systemd over a bus that may restart (`systemctl restart dbus`): when the connection is lost it is
// made again with a growing delay (UnitManager.connect subscribes again and adds the match rule),
// calls made meanwhile wait for it, idempotent calls cut off by the loss are made once more, and a
// unit's exit watch is taken up again on the new connection with a fresh reference. What the old
// connection held is gone with it: systemd drops a client's references when it leaves the bus, so
// a unit that ended during the gap may have been collected and its exit status lost; that watch
// fails with a clear error (NO_SUCH_UNIT, saying so) rather than waiting forever.
import type { Logger } from '../log.ts';
import { isSystemdAbsent, SystemdError } from './errors.ts';
import type { ManagerOptions, UnitManager } from './unit-manager.ts';
import type { ExitStatus, WatchOptions } from './unit-watch.ts';

/** What session and broker code use of systemd; a UnitManager or this module's reconnecting one. */
export type Units = Pick<UnitManager, 'startSession' | 'waitForExit' | 'kill' | 'stopAndWait' | 'listUnitsByPrefix' | 'serviceState' | 'close'> & Partial<Pick<UnitManager, 'ref'>>;

/** What a reconnecting session needs of a connected manager (a UnitManager, or a fake in tests). */
export interface Connected extends Units {
  ref(name: string): Promise<void>;
  onClose(listener: (error: SystemdError) => void): () => void;
}

export interface BusSessionOptions {
  /** How long a call waits for a lost connection to come back before it fails. */
  waitMs: number;
  firstDelayMs?: number;
  maxDelayMs?: number;
}

const FIRST_DELAY_MS = 50;
const MAX_DELAY_MS = 2000;

function exitLost(name: string, cause: unknown): SystemdError {
  const why = cause instanceof Error ? ` (${cause.message})` : '';
  return new SystemdError('NO_SUCH_UNIT', `${name} ended while the D-Bus connection was lost; its exit status is unknown${why}`, { unit: name, cause });
}

function isLost(error: unknown): boolean {
  return error instanceof SystemdError && error.code === 'DBUS_CLOSED';
}

export class BusSession implements Units {
  #connect: () => Promise<Connected>;
  #log: Logger;
  #options: Required<BusSessionOptions>;
  #current: Connected | undefined;
  #reconnecting: Promise<Connected> | undefined;
  #closed = false;
  #reconnectListeners = new Set<() => void>();
  #lastCause = '';

  private constructor(connect: () => Promise<Connected>, log: Logger, options: BusSessionOptions) {
    this.#connect = connect;
    this.#log = log;
    this.#options = { firstDelayMs: FIRST_DELAY_MS, maxDelayMs: MAX_DELAY_MS, ...options };
  }

  /** Connects once (a failure here is the caller's: nothing is served without a bus), then keeps it up. */
  static async open(connect: () => Promise<Connected>, log: Logger, options: BusSessionOptions): Promise<BusSession> {
    const session = new BusSession(connect, log, options);
    session.#adopt(await connect());
    return session;
  }

  /** Called after every reconnection, once the new connection is subscribed. */
  onReconnect(listener: () => void): () => void {
    this.#reconnectListeners.add(listener);
    return () => this.#reconnectListeners.delete(listener);
  }

  get connected(): boolean {
    return this.#current !== undefined;
  }

  #adopt(manager: Connected): void {
    this.#current = manager;
    manager.onClose((error) => {
      if (this.#current !== manager || this.#closed) return;
      this.#current = undefined;
      this.#lastCause = error.message;
      this.#log('warning', `D-Bus connection lost (${error.message}); reconnecting`);
      void this.#reconnect().catch(() => undefined);
    });
  }

  /** One reconnection loop at a time; it runs until it succeeds or the session is closed. */
  #reconnect(): Promise<Connected> {
    this.#reconnecting ??= (async () => {
      const since = Date.now();
      let delay = this.#options.firstDelayMs;
      for (let attempt = 1; ; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (this.#closed) throw new SystemdError('DBUS_CLOSED', 'D-Bus session closed');
        try {
          const manager = await this.#connect();
          if (this.#closed) {
            manager.close();
            throw new SystemdError('DBUS_CLOSED', 'D-Bus session closed');
          }
          this.#adopt(manager);
          this.#log('notice', `D-Bus connection back after ${attempt} attempts in ${Date.now() - since} ms`);
          for (const listener of [...this.#reconnectListeners]) listener();
          return manager;
        } catch (error) {
          if (this.#closed) throw error;
          this.#lastCause = (error as Error).message;
          delay = Math.min(delay * 2, this.#options.maxDelayMs);
        }
      }
    })().finally(() => (this.#reconnecting = undefined));
    return this.#reconnecting;
  }

  /** The live connection, waiting up to `waitMs` for one being made again. */
  async manager(): Promise<Connected> {
    if (this.#closed) throw new SystemdError('DBUS_CLOSED', 'D-Bus session closed');
    if (this.#current) return this.#current;
    const waitMs = this.#options.waitMs;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SystemdError('DBUS_CLOSED', `D-Bus unavailable for ${waitMs} ms: ${this.#lastCause}`)), waitMs);
    });
    try {
      return await Promise.race([this.#reconnect(), gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs an idempotent call, once more on a new connection if the old one was lost under it (or systemd was not on its bus). */
  async #again<T>(call: (manager: Connected) => Promise<T>): Promise<T> {
    const manager = await this.manager();
    try {
      return await call(manager);
    } catch (error) {
      if (this.#closed) throw error;
      // A bus systemd is not on (reached mid-restart) is dropped like a lost one.
      if (isSystemdAbsent(error)) manager.close();
      else if (!isLost(error)) throw error;
      return call(await this.manager());
    }
  }

  /** Not repeated: a start cut off by the loss may or may not have happened; the caller stops the unit. */
  async startSession(...args: Parameters<UnitManager['startSession']>): ReturnType<UnitManager['startSession']> {
    return (await this.manager()).startSession(...args);
  }

  /**
   * Waits for the unit to finish, across reconnections: on a new connection the unit is referenced
   * again and watched from its current state. Gone by then: NO_SUCH_UNIT (its status went with it).
   */
  async waitForExit(name: string, options: WatchOptions = {}): Promise<ExitStatus> {
    let manager = await this.manager();
    for (let again = false; ; again = true) {
      try {
        return await manager.waitForExit(name, options);
      } catch (error) {
        if (again && error instanceof SystemdError && error.code === 'NO_SUCH_UNIT') throw exitLost(name, error);
        // A bus systemd is not on (one reached mid-restart) is as good as lost: another connection.
        if (isSystemdAbsent(error) && !this.#closed) manager.close();
        else if (!isLost(error) || this.#closed) throw error;
      }
      manager = await this.#referencedAgain(name);
    }
  }

  /**
   * A new connection on which `name` is referenced again. One whose bus systemd is not on is dropped
   * for the next, after a growing delay and for at most `waitMs` in all: a PID 1 that never comes
   * back to the bus ends the watch, instead of a new connection (and two journal lines) every 50 ms.
   */
  async #referencedAgain(name: string): Promise<Connected> {
    const since = Date.now();
    let delay = this.#options.firstDelayMs;
    for (;;) {
      const manager = await this.manager();
      try {
        await manager.ref(name);
        this.#log('notice', `${name}: watching again after the D-Bus reconnection`);
        return manager;
      } catch (error) {
        if (isLost(error)) continue;
        if (!isSystemdAbsent(error)) throw exitLost(name, error);
        manager.close();
        if (Date.now() - since >= this.#options.waitMs) {
          throw new SystemdError('DBUS_CLOSED', `systemd was not on the D-Bus for ${this.#options.waitMs} ms: ${(error as Error).message}`, { unit: name, cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, this.#options.maxDelayMs);
      }
    }
  }

  /** A reference on a unit we did not start (an adopted kept session's), so its end can still be read. */
  ref(name: string): Promise<void> {
    return this.#again((manager) => manager.ref(name));
  }

  kill(name: string, signal: number | NodeJS.Signals, who: 'all' | 'main' = 'all'): Promise<void> {
    return this.#again((manager) => manager.kill(name, signal, who));
  }

  stopAndWait(name: string, timeoutMs: number): Promise<void> {
    return this.#again((manager) => manager.stopAndWait(name, timeoutMs));
  }

  listUnitsByPrefix(prefix: string): Promise<string[]> {
    return this.#again((manager) => manager.listUnitsByPrefix(prefix));
  }

  serviceState(unit: string): ReturnType<UnitManager['serviceState']> {
    return this.#again((manager) => manager.serviceState(unit));
  }

  /** Session-end figures (worker/accounting.ts); a manager without them (a test's fake) gives none. */
  unitProperties(...args: Parameters<UnitManager['unitProperties']>): ReturnType<UnitManager['unitProperties']> {
    return this.#again(async (manager) => (manager as Partial<Pick<UnitManager, 'unitProperties'>>).unitProperties?.(...args));
  }

  close(): void {
    this.#closed = true;
    this.#current?.close();
    this.#current = undefined;
  }
}

/** The usual way in: a BusSession over UnitManager.connect. */
export async function openBusSession(
  connect: (address: string | undefined, options: ManagerOptions) => Promise<Connected>,
  address: string | undefined,
  options: ManagerOptions,
  log: Logger,
): Promise<BusSession> {
  return BusSession.open(() => connect(address, options), log, { waitMs: options.timeoutMs ?? 10_000 });
}
