// npm start end to end without a terminal: the session's output on stdout, its status as the exit code.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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

test.run();
