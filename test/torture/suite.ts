// Runs the torture classes against one deployed supervisor: each class is measured against the
// baseline taken before it (broker fds, session units, supervisor processes) and must return to it.
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT, CONFIG_PATH, deployConfig } from '../sandbox/deploy.ts';
import { runFdCases } from './bad-fds.ts';
import { frameCases, runFrameCases } from './bad-frames.ts';
import { runInsideFloodCases, runPeerCases } from './bad-peers.ts';
import { FAULTS_WRITE_TIMEOUT_MS, runFaults } from './faults.ts';
import { Agent } from '../support/agent.ts';
import { measure, settle } from '../support/supervisor.ts';
import { brokerRss } from './harness.ts';
import { brokerLife, type ClassResult, type Scale, type TortureContext } from './report.ts';
import { runSoak } from './soak.ts';
import { RESTARTS_LIMITS, runAgentRestarts } from './agent-restarts.ts';
import { runKeptFrameCases } from './bad-kept-frames.ts';
import { runKeptPeerCases } from './bad-kept-peers.ts';

export const CLASSES = ['bad-frames', 'bad-fds', 'bad-peers', 'faults', 'soak', 'agent-restarts', 'supervisor-restarts'] as const;
export type ClassName = (typeof CLASSES)[number];

/** Config the torture deployment runs with: the frame classes open thousands of connections a minute. */
export const TORTURE_CONFIG = { limits: { idleExitMs: 600_000, maxAdmissionsPerMinute: 100_000 } };
/** The peers class runs against the shipped admission limits (32 unauthenticated, 120 a minute). */
const CLASS_CONFIG: Partial<Record<ClassName, Record<string, unknown>>> = {
  'bad-peers': { limits: { idleExitMs: 600_000 } },
  // A short write timeout, so the held-back clients outlast it many times over in seconds.
  faults: { limits: { ...TORTURE_CONFIG.limits, writeTimeoutMs: FAULTS_WRITE_TIMEOUT_MS } },
  // 16 kept sessions at once (limits.maxKept), and a slot beside them for the warm-up session.
  'agent-restarts': { limits: { ...TORTURE_CONFIG.limits, ...RESTARTS_LIMITS } },
  'supervisor-restarts': { limits: { ...TORTURE_CONFIG.limits, ...RESTARTS_LIMITS } },
};

/** Whether the agent's starts under the peer floods are asserted (they are: no start may fail). */
export const FLOOD_GOALS_ASSERTED = true;

interface Found {
  cases: number;
  passed: number;
  unexpected: string[];
  notes?: string[];
  flood?: ClassResult['flood'];
  peakRssMb?: number;
  driver?: Agent;
}

async function warm(driver: Agent, sandbox: Sandbox): Promise<void> {
  const [result] = await driver.sessions(1, ['true']);
  if (!result!.ok) {
    const journal = (await sandbox.exec(['journalctl', '-o', 'short-precise', '-n', '60', '--no-pager'])).stdout;
    throw new Error(`warm-up session failed: ${JSON.stringify(result)}\n${journal}`);
  }
}

export class Torture {
  #ctx: TortureContext;

  constructor(sandbox: Sandbox, driver: Agent, scale: Scale, note: (message: string) => void = () => undefined) {
    this.#ctx = { sandbox, driver, scale, note };
  }

  #config = JSON.stringify(TORTURE_CONFIG);

  /** Installs the class's config; the broker is stopped so the next connection starts it with that. */
  async #configure(name: ClassName): Promise<void> {
    const wanted = JSON.stringify(CLASS_CONFIG[name] ?? TORTURE_CONFIG);
    if (wanted === this.#config) return;
    const { sandbox } = this.#ctx;
    await sandbox.install([{ content: JSON.stringify(deployConfig(sandbox, JSON.parse(wanted))), to: CONFIG_PATH }]);
    await sandbox.systemctl('stop', BROKER_UNIT);
    this.#config = wanted;
  }

  async run(name: ClassName): Promise<ClassResult> {
    const ctx = this.#ctx;
    await this.#configure(name);
    await warm(ctx.driver, ctx.sandbox);
    const baseline = await measure(ctx.sandbox);
    const life = await brokerLife(ctx.sandbox);
    let peak = await brokerRss(ctx.sandbox);
    const sampler = setInterval(() => void brokerRss(ctx.sandbox).then((rss) => (peak = Math.max(peak, rss)), () => undefined), 500);
    let found: Found;
    try {
      found = await this.#class(name);
    } finally {
      clearInterval(sampler);
    }
    if (found.driver) ctx.driver = found.driver;
    // Back to where it was: a warm broker with no session.
    await warm(ctx.driver, ctx.sandbox);
    const leaked = await settle(ctx.sandbox, baseline);
    const lifeAfter = await brokerLife(ctx.sandbox);
    return {
      name,
      cases: found.cases,
      rejectedAsExpected: found.passed,
      unexpected: found.unexpected,
      brokerCrashes: lifeAfter.crashes - life.crashes,
      brokerRestarts: lifeAfter.starts - life.starts,
      leaked: { fds: Math.max(0, leaked.fds), units: Math.max(0, leaked.units), processes: Math.max(0, leaked.processes) },
      peakRssMb: Math.max(peak / 2 ** 20, found.peakRssMb ?? 0),
      flood: found.flood,
      notes: found.notes ?? [],
    };
  }

  async #class(name: ClassName): Promise<Found> {
    const ctx = this.#ctx;
    switch (name) {
      case 'bad-frames': {
        const cases = frameCases(ctx.scale, 20261201);
        const { passed, unexpected } = await runFrameCases(ctx, cases, ctx.scale === 'full' ? 8 : 4);
        // Version 3's requests, against one live kept session (one after another: see bad-kept-frames.ts).
        const kept = await runKeptFrameCases(ctx, ctx.scale === 'full' ? 1000 : 24, 20261207);
        return { cases: cases.length + kept.cases, passed: passed + kept.passed, unexpected: [...unexpected, ...kept.unexpected], notes: kept.notes };
      }
      case 'bad-fds': {
        const rounds = ctx.scale === 'full' ? 20 : 1;
        const { passed, unexpected, notes } = await runFdCases(ctx, rounds);
        return { cases: passed + unexpected.length, passed, unexpected, notes };
      }
      case 'bad-peers': {
        const peers = await runPeerCases(ctx, FLOOD_GOALS_ASSERTED);
        const kept = await runKeptPeerCases(ctx);
        // Last: it spends the minute's admissions (bad-peers.ts).
        const inside = await runInsideFloodCases(ctx, FLOOD_GOALS_ASSERTED);
        const floods = [...peers.floods, ...inside.floods];
        const passed = peers.passed + kept.passed + inside.passed;
        const unexpected = [...peers.unexpected, ...kept.unexpected, ...inside.unexpected];
        const notes = [...peers.notes, ...kept.notes, ...inside.notes];
        const worst = floods.reduce((a, b) => (b.p99Ms > a.p99Ms || b.failures > a.failures ? b : a), floods[0]!);
        const all = floods.reduce((sum, f) => ({ starts: sum.starts + f.starts, failures: sum.failures + f.failures }), { starts: 0, failures: 0 });
        return { cases: passed + unexpected.length, passed, unexpected, notes, flood: { ...worst, ...all } };
      }
      case 'faults': {
        const { passed, unexpected, notes, driver } = await runFaults(ctx);
        return { cases: passed + unexpected.length, passed, unexpected, notes, driver };
      }
      case 'agent-restarts':
      case 'supervisor-restarts': {
        const { cases, passed, unexpected, notes, driver } = await runAgentRestarts(ctx, name === 'agent-restarts' ? 'agent' : 'supervisor');
        return { cases, passed, unexpected, notes, driver };
      }
      case 'soak': {
        const soak = await runSoak(ctx);
        return { cases: soak.cases, passed: soak.passed, unexpected: soak.unexpected, notes: soak.notes, peakRssMb: soak.peakRssMb };
      }
    }
  }
}
