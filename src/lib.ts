// The package's main entry: the client library and the node-pty face, for agents that talk to the supervisor.
export * from './client/index.ts';
export { spawn, type IPty, type IPtyForkOptions, type IExitEvent, type IDisposable, type IEvent, type IStartEvent } from './client/node-pty/index.ts';
