// Waiting in tests: for a state that has no event to wait on from here, a bounded poll that says
// what it waited for (and, if asked, what it saw) when it gives up; for the promise reactions queued
// so far, one turn of the event loop. Where an event exists, wait for the event instead.
import { setImmediate as nextImmediate } from 'node:timers/promises';

/** Re-runs `probe` (pausing 10 ms, doubling to 200) until it returns true; throws after `timeoutMs`, naming `what`. */
export async function until(probe: () => boolean | Promise<boolean>, timeoutMs: number, what: string, explain?: () => string | Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; !(await probe()); pause = Math.min(pause * 2, 200)) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${explain ? `: ${await explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Resolves after every promise reaction queued so far has run (microtasks drain before the check phase). */
export function nextTurn(): Promise<void> {
  return nextImmediate();
}

/** Checks `probe` once per event-loop turn until it holds; throws after `timeoutMs`, naming `what`. For
 * in-process state another turn's I/O changes (a socket's hang-up reaching the code under test). */
export async function eachTurnUntil(probe: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await nextImmediate();
  }
}
