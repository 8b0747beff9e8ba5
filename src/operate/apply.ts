// Runs a plan's changed steps in order; every file lands by rename, so a reader sees the old or the new, never half.
import { chmodSync, chownSync, closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeStep, type Plan, type Step } from './install-plan.ts';
import { fileFacts } from './probe.ts';
import type { Runner } from './system.ts';

export class ApplyError extends Error {
  readonly code = 'APPLY_FAILED';
  constructor(
    readonly step: Step,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${describeStep(step)}: ${message}`, options);
  }
}

function staging(path: string): string {
  return join(dirname(path), `.${path.split('/').pop()}.new-${process.pid}`);
}

function writeAtomic(path: string, content: string, mode: number): void {
  const temp = staging(path);
  writeFileSync(temp, content, { mode });
  chmodSync(temp, mode);
  chownSync(temp, 0, 0);
  renameSync(temp, path);
}

/** Copies a regular file, refusing a symlink at the source (O_NOFOLLOW) or anything not a regular file. */
function copyNoFollow(from: string, to: string): void {
  const fd = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${from} is not a regular file`);
    writeFileSync(to, readFileSync(fd), { mode: 0o600 });
  } finally {
    closeSync(fd);
  }
}

/** Copies a bundle into a staging directory, checks every hash, then renames it into place. */
function installBundle(step: Extract<Step, { op: 'bundle' }>): void {
  const temp = staging(step.to);
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { mode: 0o755 });
  for (const file of step.files) {
    const target = join(temp, file.path);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    const source = join(step.from, file.path);
    // O_NOFOLLOW guards the last component; a directory on the way that is a symlink out is caught here.
    if (!realpathSync(source).startsWith(`${realpathSync(step.from)}/`)) throw new Error(`${file.path} leads out of ${step.from}`);
    copyNoFollow(source, target);
    chmodSync(target, file.mode);
    const facts = fileFacts(target);
    if (facts?.sha256 !== file.sha256) throw new Error(`${file.path} in ${step.from} does not match its manifest (sha256 ${facts?.sha256})`);
  }
  for (const dir of [temp, ...new Set(step.files.map((f) => dirname(join(temp, f.path))))]) chmodSync(dir, 0o755);
  // A directory of the same name that differs (tampered with) is moved aside first: rename cannot replace a non-empty one.
  const aside = `${temp}.old`;
  let moved = false;
  try {
    renameSync(step.to, aside);
    moved = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  renameSync(temp, step.to);
  if (moved) rmSync(aside, { recursive: true, force: true });
}

function remove(step: Extract<Step, { op: 'remove' }>): void {
  try {
    if (step.recursive) rmSync(step.path, { recursive: true, force: true });
    else {
      try {
        rmSync(step.path, { force: true });
      } catch (error) {
        // A directory: removed only when empty (something else may have put files there).
        if ((error as NodeJS.ErrnoException).code !== 'ERR_FS_EISDIR' && (error as NodeJS.ErrnoException).code !== 'EISDIR') throw error;
        if (readdirSync(step.path).length === 0) rmdirSync(step.path);
      }
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function command(run: Runner, file: string, args: string[]): void {
  const result = run(file, args);
  if (result.code !== 0) throw new Error(`exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`);
}

export function applyStep(step: Step, run: Runner): void {
  switch (step.op) {
    case 'groupadd':
      return command(run, 'groupadd', ['--system', step.name]);
    case 'groupdel':
      return command(run, 'groupdel', [step.name]);
    case 'mkdir':
      mkdirSync(step.path, { recursive: true, mode: step.mode });
      return chmodSync(step.path, step.mode);
    case 'bundle':
      return installBundle(step);
    case 'link': {
      const temp = staging(step.path);
      rmSync(temp, { force: true });
      symlinkSync(step.target, temp);
      return renameSync(temp, step.path);
    }
    case 'write':
      return writeAtomic(step.path, step.content, step.mode);
    case 'remove':
      return remove(step);
    case 'systemctl':
      return command(run, 'systemctl', step.args);
    case 'wait-sessions':
      // Stopping the socket already stopped the broker (Requires=), whose shutdown ends its sessions
      // (clients get ERROR SHUTDOWN); what is left (a unit no broker claims) is stopped here.
      // systemctl stop waits for each stop job; exit 5 means the unit is already gone.
      for (const unit of step.units) {
        const result = run('systemctl', ['stop', unit]);
        if (result.code !== 0 && result.code !== 5) throw new Error(`systemctl stop ${unit} exited ${result.code}: ${result.stderr.trim()}`);
      }
      return;
  }
}

/** Applies the changed steps; `say` hears each as it is done. Throws ApplyError naming the step that failed. */
export function applyPlan(plan: Plan, run: Runner, say: (line: string) => void): number {
  let changed = 0;
  for (const { step, change } of plan.steps) {
    if (!change) continue;
    try {
      applyStep(step, run);
    } catch (error) {
      throw new ApplyError(step, (error as Error).message, { cause: error });
    }
    say(describeStep(step));
    changed++;
  }
  return changed;
}
