// The host's end of a probe's command socket: one JSON line per connection, one JSON answer back.
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

export class Probe {
  readonly #path: string;

  private constructor(path: string) {
    this.#path = path;
  }

  /** Waits (up to 10 s) for the probe's socket to appear, then returns its handle. */
  static async open(path: string): Promise<Probe> {
    const deadline = Date.now() + 10_000;
    while (!existsSync(path)) {
      if (Date.now() > deadline) throw new Error(`the probe did not listen on ${path}`);
      await delay(20);
    }
    return new Probe(path);
  }

  async call(command: Record<string, unknown>): Promise<any> {
    const connection = net.createConnection(this.#path);
    connection.end(`${JSON.stringify(command)}\n`);
    let text = '';
    connection.on('data', (chunk) => (text += chunk));
    await once(connection, 'close');
    const reply = JSON.parse(text) as { ok: boolean; answer?: unknown; error?: string };
    if (!reply.ok) throw Object.assign(new Error(`${String(command.op)}: ${reply.error}`), { code: reply.error });
    return reply.answer;
  }
}
