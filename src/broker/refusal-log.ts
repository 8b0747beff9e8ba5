// Refusals are logged once per peer per episode, with a count, never once per connection (pure).
//
// A flood forks new PIDs, so a peer is keyed by what stays: its cgroup (or its credentials when it
// is not the client account). An episode of a key ends after QUIET_MS without a refusal of it; its
// closing line says how many connections were refused over how long.

export const QUIET_MS = 10_000;
/** Keys tracked at once; refusals beyond them are counted under one shared key. */
export const MAX_KEYS = 256;
const OVERFLOW_KEY = '(other peers)';

interface Episode {
  reason: string;
  first: number;
  last: number;
  count: number;
}

export class RefusalLog {
  #episodes = new Map<string, Episode>();
  #quietMs: number;
  #maxKeys: number;

  constructor(quietMs = QUIET_MS, maxKeys = MAX_KEYS) {
    this.#quietMs = quietMs;
    this.#maxKeys = maxKeys;
  }

  /** Counts one refusal; returns the line to log now when it opens an episode, else undefined. */
  record(key: string, reason: string, detail: string, now: number): string | undefined {
    let episode = this.#episodes.get(key);
    if (!episode && this.#episodes.size >= this.#maxKeys) {
      key = OVERFLOW_KEY;
      episode = this.#episodes.get(key);
    }
    if (episode) {
      episode.count += 1;
      episode.last = now;
      return undefined;
    }
    this.#episodes.set(key, { reason, first: now, last: now, count: 1 });
    // The key is a peer's cgroup path, which a delegated subtree could name with a newline: quoted.
    return `refused ${JSON.stringify(key)}: ${reason} (${detail}); further refusals of it are counted until ${this.#quietMs / 1000} s pass without one`;
  }

  /** Ends the episodes quiet for QUIET_MS; returns their closing lines (only for episodes of more than one refusal). */
  expire(now: number): string[] {
    const lines: string[] = [];
    for (const [key, episode] of this.#episodes) {
      if (now - episode.last < this.#quietMs) continue;
      this.#episodes.delete(key);
      if (episode.count > 1) {
        const seconds = ((episode.last - episode.first) / 1000).toFixed(1);
        lines.push(`refused ${JSON.stringify(key)} ${episode.count} times over ${seconds} s: ${episode.reason}`);
      }
    }
    return lines;
  }

  get open(): number {
    return this.#episodes.size;
  }
}
