// Throws on the next tick: an error raised in a callback must not unwind through the native poll callback that
// called it, and still surfaces as an ordinary uncaught exception.
export function rethrowLater(error: unknown): void {
  process.nextTick(() => {
    throw error;
  });
}
