// Whether the close pool has nothing pending within `ms`. The pool reports no event when it empties,
// so this polls its counts on a timer (bounded), as a child of a test does before saying "settled".
import { native } from '../../src/native/binding.ts';

export async function closesSettled(ms = 10_000): Promise<'settled' | 'held'> {
  const deadline = Date.now() + ms;
  while (native().pendingCloses() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return native().pendingCloses() === 0 ? 'settled' : 'held';
}
