// One scenario against a terminal backend, reporting what a caller observes as one JSON line on stdout:
// `probe <supervisor|node-pty> <scenario> <cwd>`. The same code drives @lydell/node-pty (spawning directly)
// and this package's node-pty face (through the supervisor), on Node or on Bun.
import { realpathSync } from 'node:fs';
import { spawn as supervisorSpawn } from '../../src/client/node-pty/index.ts';

interface Pty {
  pid: number;
  onData(listener: (data: string) => void): { dispose(): void };
  onExit(listener: (event: { exitCode: number; signal?: number }) => void): { dispose(): void };
  write(data: string): void;
  resize(cols: number, rows: number): void;
  kill(signal?: string): void;
  pause(): void;
  resume(): void;
}
type Spawn = (file: string, args: string[], options: Record<string, unknown>) => Pty;

export interface ProbeResult {
  exit?: { exitCode: number; signal?: number };
  output?: string;
  /** Whatever else the scenario measured. */
  seen?: unknown;
  /** Data events after onExit, onExit calls. */
  dataAfterExit: number;
  exits: number;
  error?: string;
}

const [backend, scenario, cwd] = process.argv.slice(2) as [string, string, string];
const DEADLINE_MS = 30_000;

async function loadSpawn(): Promise<Spawn> {
  if (backend === 'supervisor') return supervisorSpawn as unknown as Spawn;
  // Resolved at run time, so bundling the supervisor probe leaves node-pty out.
  const name = '@lydell/node-pty';
  const module = (await import(name)) as { spawn?: Spawn; default?: { spawn: Spawn } };
  return module.spawn ?? module.default!.spawn;
}

/** Runs the program to its exit, collecting output; `drive` reacts to output as it comes. */
function run(spawn: Spawn, file: string, args: string[], options: Record<string, unknown>, drive?: (pty: Pty, output: string) => void, setup?: (pty: Pty) => void) {
  return new Promise<ProbeResult & { pty: Pty }>((resolve) => {
    const pty = spawn(file, args, { name: 'xterm', cols: 80, rows: 24, cwd, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' }, ...options });
    setup?.(pty);
    let output = '';
    let exits = 0;
    let dataAfterExit = 0;
    const timer = setTimeout(() => resolve({ pty, output, exits, dataAfterExit, error: 'timed out' }), DEADLINE_MS);
    pty.onData((data) => {
      if (exits > 0) dataAfterExit += 1;
      output += data;
      drive?.(pty, output);
    });
    pty.onExit((exit) => {
      exits += 1;
      if (exits > 1) return;
      clearTimeout(timer);
      // A turn later, so data a backend delivers after its exit event is counted.
      setTimeout(() => resolve({ pty, exit: { ...exit }, output, exits, dataAfterExit }), 100);
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves with the output once `mark` is in it, or with nothing once the terminal exits first. */
function until(pty: Pty, mark: string): Promise<{ output: string; exit?: { exitCode: number; signal?: number } }> {
  return new Promise((resolve) => {
    let output = '';
    let done = false;
    pty.onData((data) => {
      output += data;
      if (!done && output.includes(mark)) {
        done = true;
        resolve({ output });
      }
    });
    pty.onExit((exit) => {
      if (!done) {
        done = true;
        resolve({ output, exit: { ...exit } });
      }
    });
  });
}

function exitOf(pty: Pty): Promise<{ exitCode: number; signal?: number }> {
  return new Promise((resolve) => pty.onExit((exit) => resolve({ ...exit })));
}

/** kill() once `mark` is printed; how long from kill() to onExit (ms). */
async function killAfter(spawn: Spawn, file: string, args: string[], mark: string, options: Record<string, unknown> = {}) {
  let killedAt = 0;
  const result = await run(spawn, file, args, options, (pty, output) => {
    if (!killedAt && output.includes(mark)) {
      killedAt = Date.now();
      pty.kill();
    }
  });
  // The 100 ms run() waits after onExit is not the program's.
  return { ...result, endMs: killedAt ? Date.now() - killedAt - 100 : -1 };
}

/** Ignores the hang-up and SIGTERM (its sleeps inherit that): only the KILL step ends it. */
const STUBBORN = ['sh', ['-c', 'trap "" HUP TERM; echo ready; while :; do sleep 1; done']] as const;

const SCENARIOS: Record<string, (spawn: Spawn) => Promise<ProbeResult>> = {
  // A euro sign and an emoji cut across writes (dash's printf takes octal escapes).
  utf8: (spawn) => run(spawn, 'sh', ['-c', "printf '\\342\\202'; sleep 0.2; printf '\\254\\360\\237'; sleep 0.2; printf '\\230\\200\\n'"], {}),
  // 3 MB and exit at once: nothing may be lost at the end.
  bulk: async (spawn) => {
    const result = await run(spawn, 'sh', ['-c', "head -c 3000000 /dev/zero | tr '\\0' a"], {});
    return { ...result, output: undefined, seen: { a: result.output?.split('a').length! - 1 } };
  },
  exit7: (spawn) => run(spawn, 'sh', ['-c', 'exit 7'], {}),
  kill9: (spawn) => run(spawn, 'sh', ['-c', 'kill -9 $$'], {}),
  killint: (spawn) => run(spawn, 'sh', ['-c', 'kill -INT $$'], {}),
  size: async (spawn) => {
    let resized = false;
    const result = await run(spawn, 'sh', ['-c', 'stty size; read x; stty size'], { cols: 100, rows: 30 }, (pty, output) => {
      if (!resized && output.includes('30 100')) {
        resized = true;
        pty.resize(120, 40);
        pty.write('\r');
      }
    });
    return { ...result, seen: result.output?.match(/\d+ \d+/g) };
  },
  cwd: async (spawn) => {
    const result = await run(spawn, 'pwd', ['-P'], {});
    return { ...result, seen: { same: result.output?.trim() === realpathSync(cwd) } };
  },
  env: async (spawn) => {
    const env = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', AGENT_TOOL_VAR: 'x', NOTIFY_SOCKET: '/nowhere', LISTEN_FDS: '3' };
    const result = await run(spawn, 'env', [], { env });
    const names = (result.output ?? '').split(/\r?\n/).map((line) => line.split('=')[0]).filter(Boolean);
    return { ...result, output: undefined, seen: Object.fromEntries(Object.keys(env).map((name) => [name, names.includes(name)])) };
  },
  pause: async (spawn) => {
    let paused = false;
    const result = await run(spawn, 'sh', ['-c', "head -c 2000000 /dev/zero | tr '\\0' b"], {}, (pty) => {
      if (paused) return;
      paused = true;
      pty.pause();
      setTimeout(() => pty.resume(), 500);
    });
    return { ...result, output: undefined, seen: { b: result.output?.split('b').length! - 1 } };
  },
  background: async (spawn) => {
    let job = 0;
    const result = await run(spawn, 'sh', ['-c', 'sleep 1000 & echo job=$!; wait'], {}, (pty, output) => {
      const match = /job=(\d+)/.exec(output);
      if (!job && match) {
        job = Number(match[1]);
        pty.kill();
      }
    });
    const jobAlive = job > 0 && alive(job);
    if (jobAlive) process.kill(job, 'SIGKILL');
    return { ...result, output: undefined, seen: { jobAlive } };
  },
  early: (spawn) =>
    run(spawn, 'sh', [], {}, undefined, (pty) => {
      // Written before the session exists: it must reach the shell.
      pty.write('echo early-$((40+2)); exit 3\r');
    }).then((result) => ({ ...result, output: undefined, seen: { echoed: (result.output ?? '').includes('early-42') } })),
  // process.kill(pty.pid, 'SIGINT') as a caller of node-pty does it: pid must be the program's own.
  pid: async (spawn) => {
    let printed = 0;
    let reported = 0;
    const result = await run(spawn, 'sh', ['-c', 'echo pid=$$; exec sleep 1000'], {}, (pty, output) => {
      const match = /pid=(\d+)/.exec(output);
      if (!printed && match) {
        printed = Number(match[1]);
        reported = pty.pid;
        process.kill(pty.pid, 'SIGINT');
      }
    });
    return { ...result, output: undefined, seen: { pidIsProgram: printed > 0 && printed === reported } };
  },
  // node-pty's chdir(2) failure, or our reason line: what a caller showing only onData sees.
  missingcwd: async (spawn) => {
    const result = await run(spawn, 'sh', ['-c', 'echo ran'], { cwd: `${cwd}/no-such-directory` });
    return { ...result, output: undefined, seen: { lines: (result.output ?? '').split('\r\n').filter(Boolean), ran: (result.output ?? '').includes('ran') } };
  },
  // kill() is a hang-up: the program's HUP trap runs and decides the exit.
  huptrap: async (spawn) => {
    const { endMs, ...result } = await killAfter(spawn, 'bash', ['-c', 'trap "echo HUP-TRAP; exit 3" HUP; echo ready; while :; do sleep 0.1; done'], 'ready');
    return { ...result, output: undefined, seen: { trapped: (result.output ?? '').includes('HUP-TRAP'), beforeGrace: endMs < 900 } };
  },
  // An interactive bash ends at the hang-up, well before any later step.
  killbash: async (spawn) => {
    const { endMs, ...result } = await killAfter(spawn, 'bash', ['--norc', '--noprofile', '-i'], 'prompt$ ', { env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', PS1: 'prompt$ ' } });
    return { ...result, output: undefined, seen: { beforeGrace: endMs < 900 } };
  },
  // A program that does not handle SIGHUP dies of it.
  killsleep: async (spawn) => {
    const { endMs, ...result } = await killAfter(spawn, 'sh', ['-c', 'echo ready; exec sleep 1000'], 'ready');
    return { ...result, output: undefined, seen: { beforeGrace: endMs < 900 } };
  },
  // "16 means 16": 20 terminals opened and removed at once, whose programs ignore SIGHUP and SIGTERM (each
  // holds its slot until the KILL step), then 16 at once: all start; the 17th is refused, visibly.
  limit: async (spawn) => {
    const options = { name: 'xterm', cols: 80, rows: 24, cwd, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } };
    const began = Date.now();
    /** Listened to from spawn on, so no end is missed. */
    const open = () => {
      const pty = spawn(STUBBORN[0], [...STUBBORN[1]], options);
      const exit = exitOf(pty);
      return { pty, exit, ready: until(pty, 'ready') };
    };
    const removed: Promise<unknown>[] = [];
    const failures: string[] = [];
    let cycles = 0;
    for (let i = 0; i < 20; i++) {
      const { pty, exit, ready } = open();
      const seen = await ready;
      if (seen.exit) failures.push(`cycle ${i}: ${JSON.stringify(seen)}`);
      else cycles += 1;
      removed.push(exit);
      pty.kill();
    }
    const together = Array.from({ length: 16 }, open);
    const ready = await Promise.all(together.map((one) => one.ready));
    for (const [i, seen] of ready.entries()) if (seen.exit) failures.push(`together ${i}: ${JSON.stringify(seen)}`);
    const startedMs = Date.now() - began;
    const extra = await run(spawn, 'sh', ['-c', 'echo ran'], {});
    for (const { pty } of together) pty.kill();
    await Promise.all([...together.map((one) => one.exit), ...removed]);
    return {
      exits: 1,
      dataAfterExit: 0,
      exit: extra.exit,
      seen: { cycles, together: ready.filter((one) => !one.exit).length, extra: extra.output, startedMs, failures },
    };
  },
  missing: async (spawn) => {
    const result = await run(spawn, '/nonexistent/program', [], {});
    return { ...result, output: undefined };
  },
};

const spawn = await loadSpawn();
const probe = SCENARIOS[scenario];
let result: ProbeResult;
try {
  if (!probe) throw new Error(`unknown scenario ${scenario}`);
  const { pty: _pty, ...rest } = (await probe(spawn)) as ProbeResult & { pty?: Pty };
  result = rest;
} catch (error) {
  result = { exits: 0, dataAfterExit: 0, error: String(error) };
}
process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
