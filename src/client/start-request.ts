// START from the client's side: the options checked against the version the server chose, the working directory
// opened here (never a path resolved later by the server), and the frame that carries its identity.
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { SANDBOX_VERSION, encodeFrame, isProtocolError, type FrameOf } from '../protocol/index.ts';
import { ClientError, throwIfAborted } from './client-error.ts';
import type { StartOptions } from './client-options.ts';
import { fitEnvironment } from './environment-fit.ts';
import { needKeepVersion, needVersion } from './kept-sessions.ts';
import { sandboxOf } from './sandbox-options.ts';

export interface StartRequest {
  /** START, encoded for the chosen version. */
  frame: Buffer;
  /** The working directory, the caller's to send on the frame's first byte and then close. */
  dirFd: number;
  /** Names the client could not fit into START. */
  droppedEnv: string[];
  kept: boolean;
}

/** Throws (nothing opened) when `version` cannot carry what is asked or the signal is aborted, and CWD or
 * BAD_START (the directory closed again) when the directory or the frame cannot be made. */
export function startRequest(options: StartOptions, version: number): StartRequest {
  const { argv, cwd = process.cwd(), env = {}, rows = 24, cols = 80, keepMs = 0, retainBytes = 0, label = '', profile, network, budgets } = options;
  if (keepMs !== 0 || retainBytes !== 0 || label !== '') needKeepVersion(version, 'a kept or labelled session');
  const sandbox = sandboxOf(profile, network, budgets);
  if (sandbox) needVersion(version, SANDBOX_VERSION, 'a profile, network mode or budget');
  throwIfAborted(options.signal);
  const dirFd = openDirectory(cwd);
  try {
    // bigint: st_ino and st_dev are 64-bit and may exceed 2^53.
    const stat = fstatSync(dirFd, { bigint: true });
    const fitted = fitEnvironment(env, argv);
    const start: FrameOf<'start'> = { type: 'start', rows, cols, cwdDev: stat.dev, cwdIno: stat.ino, argv, env: fitted.entries };
    const frame = encodeFrame({ ...start, keepMs, retainBytes, label, ...sandbox }, version);
    return { frame, dirFd, droppedEnv: fitted.dropped, kept: keepMs > 0 };
  } catch (error) {
    closeSync(dirFd);
    if (isProtocolError(error)) throw new ClientError('BAD_START', error.message, { cause: error });
    throw new ClientError('CWD', `cannot stat ${cwd}`, { cause: error });
  }
}

function openDirectory(cwd: string): number {
  try {
    // O_DIRECTORY: a path that is not a directory fails here, not at the server.
    return openSync(cwd, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (error) {
    const errno = (error as { code?: string }).code;
    throw new ClientError('CWD', `cannot open ${cwd} as a directory: ${errno ?? String(error)}`, { errno, cause: error });
  }
}
