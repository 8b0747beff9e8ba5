// npm start end to end without a terminal: the session's output on stdout, its status as the exit code.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childrenOf } from '../sandbox/namespaces.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

function start(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['start', '--silent', '--', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test("npm start -- sh -c 'echo hi; exit 3' prints hi and exits 3", async () => {
  const run = await start(['sh', '-c', 'echo hi; id -un; exit 3']);
  assert.is(run.code, 3, run.stderr);
  assert.is(run.stdout, 'hi\r\nocpty-client\r\n');
});

test('a program killed by a signal exits 128+N, like a shell', async () => {
  const run = await start(['sh', '-c', 'kill -TERM $$']);
  assert.is(run.code, 143, run.stderr);
});

/** npm start with stdin piped, resolving once the session printed `ready`. */
function interactive(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; ready: Promise<void>; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn('npm', ['start', '--silent', '--', ...args], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  let ready: () => void = () => undefined;
  const readyPromise = new Promise<void>((resolve) => (ready = resolve));
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
    if (stdout.includes('ready')) ready();
  });
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  // 'close' comes once every holder of the pipes is gone: npm, the start script and the session's client.
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  // A start that ends before `ready` fails the test with what it printed: waiting on `ready` alone
  // left nothing to keep the runner alive, and it exited early without saying why.
  const readyOrEnd = Promise.race([
    readyPromise,
    done.then(({ code }) => {
      if (!stdout.includes('ready')) throw new Error(`npm start ended (${code}) before the session printed ready; stdout: ${JSON.stringify(stdout)}; stderr: ${stderr}`);
    }),
  ]);
  return { child, ready: readyOrEnd, done };
}

function descendants(pid: number): number[] {
  const found = childrenOf(pid);
  return [...found, ...found.flatMap(descendants)];
}

test("another program deleting its own file in the temp dir is ordinary churn: a warning, the session's status stays", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-churn-'));
  const theirs = join(dir, 'their-file');
  writeFileSync(theirs, 'x');
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: dir };
  delete env.CI;
  const run = interactive(['sh', '-c', 'echo ready; read line; exit 3'], env);
  await run.ready;
  rmSync(theirs);
  run.child.stdin!.end('go\n');
  const result = await run.done;
  rmSync(dir, { recursive: true, force: true });
  assert.is(result.code, 3, result.stderr);
  assert.match(result.stderr, /disappeared \(deleted by their owners\?\): their-file/);
  assert.not.match(result.stderr, /HOST CHECK FAILED/);
});

test("a failed host check is reported on stderr and never replaces the session's status", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'opencode-pty-strict-'));
  const theirs = join(dir, 'their-file');
  writeFileSync(theirs, 'x');
  // Strict (as in CI): the same deletion is a difference.
  const run = interactive(['sh', '-c', 'echo ready; read line; exit 0'], { ...process.env, TMPDIR: dir, CI: '1' });
  await run.ready;
  rmSync(theirs);
  run.child.stdin!.end('go\n');
  const result = await run.done;
  rmSync(dir, { recursive: true, force: true });
  assert.is(result.code, 0, result.stderr);
  assert.match(result.stderr, /HOST CHECK FAILED[\s\S]*disappeared: their-file/);
});

test('SIGTERM to npm start takes the start script and its sandbox along', async () => {
  const run = interactive(['sh', '-c', 'echo ready; exec sleep 600'], process.env);
  await run.ready;
  const script = descendants(run.child.pid!).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('scripts/start.ts');
    } catch {
      return false;
    }
  });
  assert.ok(script, 'the start script runs below npm');
  run.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([run.done.then(() => 'closed'), new Promise((resolve) => (timer = setTimeout(() => resolve('still running'), 60_000)))]);
  clearTimeout(timer);
  if (outcome !== 'closed') process.kill(script!, 'SIGKILL');
  assert.is(outcome, 'closed', 'the script and the session let go of the pipes');
  assert.not.ok(existsSync(`/proc/${script}`), 'the start script is gone');
});

test.run();
