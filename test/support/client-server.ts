// The client library against the hand-driven server (test/client/test-server.ts): a client with its handshake done
// at a given version, the server's side of it, and the ClientError a call must reject with.
import { ClientError, connect, type Client } from '../../src/client/index.ts';
import type { ServerConnection, TestServer } from '../client/test-server.ts';
import { rejectionOf } from './rejection.ts';

/** A client connected to `server` with the handshake done at `version`, and the server's side of it. */
export async function handshaken(server: TestServer, version: number): Promise<{ client: Client; conn: ServerConnection }> {
  const accepted = server.accept();
  const connecting = connect(server.path);
  const conn = await accepted;
  await conn.handshake(version);
  return { client: await connecting, conn };
}

/** The ClientError `promise` rejects with (a promise that resolves fails the test). */
export const rejection = rejectionOf(ClientError);
