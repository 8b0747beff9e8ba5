// Types of peer.mjs (plain JavaScript: it runs as a command inside the sandbox without a build).
import type { Socket } from 'node:net';

export interface PeerReport {
  ms: number;
  frame: string;
  code?: number;
  message?: string;
  version?: number;
  closed?: boolean;
  error?: string;
  frames?: string[];
}
export const HELLO: Buffer;
export function connectOne(socketPath: string, mode: string, hold: boolean, sockets?: Socket[]): Promise<PeerReport>;
export function runPeers(socketPath: string, count: number, mode: string, hold: boolean, sockets?: Socket[]): Promise<PeerReport[]>;
export function flood(socketPath: string, seconds: number, parallel?: number): Promise<Record<string, number>>;
