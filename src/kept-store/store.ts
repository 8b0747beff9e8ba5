// Where root keeps what a kept session needs to outlive the supervisor: a directory only root may enter
// (not a RuntimeDirectory=, which systemd removes at every stop of the broker; under /run, which a
// reboot clears, as it ends every unit), holding per session its rendezvous socket (the helper listens,
// only root connects) and its record (record.ts), written whole or not at all (a temporary file renamed).
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseRecord, type KeptRecord } from './record.ts';

/** A record is a few hundred bytes (its strings are bounded): anything far larger was not written by us,
 * and is not read whole into the broker's memory. */
export const MAX_RECORD_BYTES = 64 * 1024;

/** The directory, 0700 root:root. */
export const KEPT_DIR = '/run/opencode-pty-kept';

export class KeptStore {
  readonly dir: string;

  constructor(dir = KEPT_DIR) {
    this.dir = dir;
  }

  socketPath(id: number): string {
    return join(this.dir, `${id}.sock`);
  }

  recordPath(id: number): string {
    return join(this.dir, `${id}.json`);
  }

  /** Creates the directory if it is missing, then refuses it unless it is a real directory of root's, 0700:
   * anyone else able to enter it could connect to a session's helper, or write its record. */
  ensure(): void {
    try {
      mkdirSync(this.dir, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const stat = lstatSync(this.dir);
    if (!stat.isDirectory() || stat.uid !== 0 || stat.gid !== 0 || (stat.mode & 0o7777) !== 0o700) {
      throw new Error(`${this.dir} is not a directory of root's with mode 0700 (uid ${stat.uid}, gid ${stat.gid}, mode ${(stat.mode & 0o7777).toString(8)})`);
    }
  }

  /** Written to a temporary file, then renamed over the record: a reader sees the old record or the new. */
  write(record: KeptRecord): void {
    const path = this.recordPath(record.sessionId);
    const temporary = `${path}.${process.pid}.tmp`;
    const fd = openSync(temporary, 'w', 0o600);
    try {
      writeSync(fd, JSON.stringify(record));
      fsyncSync(fd);
      closeSync(fd);
      renameSync(temporary, path);
    } catch (error) {
      // A full /run: the temporary file goes, and so does the old record, which no longer says what
      // root knows (a stale detach time would end or lengthen the session at its adoption).
      try {
        closeSync(fd);
      } catch {}
      rmSync(temporary, { force: true });
      rmSync(path, { force: true });
      throw error;
    }
  }

  /** `unit`'s record, or why there is none to trust. */
  read(unit: string, id: number, prefix: string): { record: KeptRecord } | { why: string } {
    let json: string;
    try {
      const size = statSync(this.recordPath(id)).size;
      if (size > MAX_RECORD_BYTES) return { why: `its record is ${size} bytes, over ${MAX_RECORD_BYTES}` };
      json = readFileSync(this.recordPath(id), 'utf8');
    } catch (error) {
      return { why: (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'it has no record' : `its record cannot be read (${(error as Error).message})` };
    }
    return parseRecord(json, unit, prefix);
  }

  /** The session is over: its socket, its record and any temporary one go (nothing there is no error). */
  remove(id: number): void {
    for (const name of this.#names()) if (name.startsWith(`${id}.`)) rmSync(join(this.dir, name), { force: true });
  }

  #names(): string[] {
    try {
      return readdirSync(this.dir);
    } catch {
      return [];
    }
  }

  /** Session ids with a file here (socket, record or a temporary one), for removing those no unit has. */
  ids(): number[] {
    const ids = new Set<number>();
    for (const name of this.#names()) {
      const match = /^(\d{1,16})\./.exec(name);
      if (match) ids.add(Number(match[1]));
    }
    return [...ids];
  }
}
