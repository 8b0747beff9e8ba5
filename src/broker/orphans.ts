// Session units no live worker answers for (an earlier run's, or one whose worker died while the bus
// was away): stopped in parallel and in the background, each holding a session slot until it is gone.
import type { Logger } from '../log.ts';
import type { SessionSlots } from './session-slots.ts';
import { reapUnit, type UnitStopper } from './unit-reaper.ts';

/** After an orphan's TimeoutStopSec: time for systemd's own stop to finish before our SIGKILL. */
export const ORPHAN_STOP_MARGIN_MS = 2000;

export interface OrphanDeps {
  units: UnitStopper & { listUnitsByPrefix(prefix: string): Promise<string[]> };
  slots: SessionSlots;
  log: Logger;
  /** The session units' name prefix. */
  prefix: string;
  /** The units' own TimeoutStopSec, in seconds. */
  stopTimeoutSec: number;
  /** After our SIGKILL: one more bounded wait for the unit to go. */
  killWaitMs: number;
  /** Called when an orphan is gone (the broker may now be idle or done). */
  changed(): void;
  /** A unit no worker claims: adopted when it is a kept session with its record, else reaped (kept-adoption.ts); reaped when absent. */
  unclaimed?(unit: string, why: string): void;
}

/** What the recheck asks of the broker: the units its live workers claim. */
export interface SessionOwner {
  claimed(): Set<string>;
  sessions(): number;
  stopping(): boolean;
}

export class Orphans {
  #deps: OrphanDeps;
  #stopping = new Set<string>();

  constructor(deps: OrphanDeps) {
    this.#deps = deps;
  }

  get size(): number {
    return this.#stopping.size;
  }

  has(unit: string): boolean {
    return this.#stopping.has(unit);
  }

  /** Units with the session prefix that are loaded now. */
  list(): Promise<string[]> {
    return this.#deps.units.listUnitsByPrefix(this.#deps.prefix);
  }

  /** Stops `unit` in the background; its slot is held until it is gone (or given up on, then logged). */
  reap(unit: string, why = 'left by an earlier run'): void {
    const { log, slots, units, stopTimeoutSec, killWaitMs } = this.#deps;
    if (this.#stopping.has(unit)) return;
    this.#stopping.add(unit);
    const counted = slots.tryTake();
    log('notice', `stopping ${unit}, ${why}`);
    // The orderly stop is bounded by the unit's own TimeoutStopSec plus a margin, then SIGKILL:
    // programs that ignore SIGHUP and SIGTERM cost one stop timeout in all, not one each.
    const stopWaitMs = stopTimeoutSec * 1000 + ORPHAN_STOP_MARGIN_MS;
    void reapUnit(units, unit, { stopWaitMs, killWaitMs }, log).then(() => {
      this.#stopping.delete(unit);
      counted?.release();
      this.#deps.changed();
    });
  }

  /**
   * After a bus reconnection: a session unit that no live worker claims (its worker died while the
   * bus was away, so its stop could not be asked for) is stopped like an orphan. A worker names its
   * unit to us before starting it, so a second look after `pauseMs` spares units whose name is still
   * on its way to us.
   */
  async recheck(owner: SessionOwner, pauseMs: number): Promise<void> {
    const { log } = this.#deps;
    const unclaimed = async () => {
      const units = await this.list();
      const owned = owner.claimed();
      return units.filter((unit) => !owned.has(unit) && !this.#stopping.has(unit));
    };
    try {
      const first = await unclaimed();
      log('info', `after the D-Bus reconnection: ${owner.sessions()} sessions, ${first.length} units unclaimed`);
      if (first.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      const still = new Set(await unclaimed());
      const why = 'which no worker claims after the D-Bus reconnection';
      for (const unit of first) if (still.has(unit) && !owner.stopping()) (this.#deps.unclaimed ?? ((name: string, text: string) => this.reap(name, text)))(unit, why);
    } catch (error) {
      log('warning', `re-checking session units after the D-Bus reconnection: ${(error as Error).message}`);
    }
  }
}
