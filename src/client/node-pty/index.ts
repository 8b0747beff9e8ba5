// node-pty's interface over the supervisor: `spawn(file, args, options)` returns an IPty at once.
import { resolveAttachOptions, resolveOptions, type IPtyAttachOptions, type IPtyForkOptions } from './options.ts';
import { Terminal } from './terminal.ts';

export type { IPtyAttachOptions, IPtyForkOptions } from './options.ts';
export type { IExitEvent } from './exit-shape.ts';
export type { IDisposable, IEvent, IStartEvent } from './terminal.ts';
export { Terminal } from './terminal.ts';

/** node-pty's IPty, as this module implements it. */
export type IPty = Pick<
  Terminal,
  'pid' | 'id' | 'cursor' | 'role' | 'detach' | 'cols' | 'rows' | 'process' | 'handleFlowControl' | 'onData' | 'onExit' | 'onStart' | 'write' | 'resize' |
  'clear' | 'kill' | 'pause' | 'resume' | 'on' | 'once' | 'off' | 'removeListener' | 'addListener'
>;

/** Starts a terminal session through the supervisor. Throws only for invalid arguments (synchronously,
 * as node-pty); everything later, a refusal included, arrives through onExit (and an 'error' event). */
export function spawn(file: string, args: string[] | string = [], options: IPtyForkOptions = {}): IPty {
  return new Terminal(resolveOptions(file, args, options, process.env));
}

/** Attaches to kept session `id` (a spawned IPty's `id`, with `keepMs`): returns at once an IPty whose first
 * onData is the replay from `cursor` (-1: from now), then the live output; onExit as for spawn(). */
export function attach(id: number, options: IPtyAttachOptions = {}): IPty {
  return new Terminal(resolveAttachOptions(id, options, process.env));
}
