// Where root keeps what a kept session needs to outlive the supervisor: a directory only root may enter
// (not a RuntimeDirectory=, which systemd removes at every stop of the broker; under /run, which a
// reboot clears, as it ends every unit), holding per session its rendezvous socket (the helper listens,
// only root connects) and its record (record.ts), written whole or not at all (a temporary file renamed);
// and, for a session that ended unseen, the end root keeps past its unit (ended-record.ts).
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { parseRecord, type KeptRecord } from './record.ts';
import { parseEnded, type EndedRecord } from './ended-record.ts';

/** A record is a few hundred bytes (its strings are bounded): anything far larger was not written by us,
 * and is not read whole into the broker's memory. */
export const MAX_RECORD_BYTES = 64 * 1024;

/** An ended record's name after its id (ended-record.ts), and what names it or a temporary one of it. */
const ENDED = '.ended.json';
const ENDED_NAME = /^\d{1,16}\.ended\.json(\.\d+\.tmp)?$/;

/** The directory, 0700 root:root. */
export const KEPT_DIR = '/run/opencode-pty-kept';

/** Why a file of the store could not be removed (a journal line's text); the caller goes on. */
export type RemoveFailed = (name: string, why: string) => void;

export class KeptStore {
  readonly dir: string;
  #removeFailed: RemoveFailed;

  /** `removeFailed`: told of each file that stays (a directory planted under a session's name, say): a
   * removal never throws, so no such file stops a start or a session's end. */
  constructor(dir = KEPT_DIR, removeFailed: RemoveFailed = () => undefined) {
    this.dir = dir;
    this.#removeFailed = removeFailed;
  }

  socketPath(id: number): string {
    return join(this.dir, `${id}.sock`);
  }

  recordPath(id: number): string {
    return join(this.dir, `${id}.json`);
  }

  endedPath(id: number): string {
    return join(this.dir, `${id}${ENDED}`);
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
    writeWhole(this.recordPath(record.sessionId), record);
  }

  /** `unit`'s record, or why there is none to trust. */
  read(unit: string, id: number, prefix: string): { record: KeptRecord } | { why: string } {
    const json = readBounded(this.recordPath(id), 'record');
    return typeof json === 'string' ? parseRecord(json, unit, prefix) : json;
  }

  /** The end root keeps of session `id` (ended-record.ts), written whole or not at all. */
  writeEnded(ended: EndedRecord): void {
    writeWhole(this.endedPath(ended.session.sessionId), ended);
  }

  /** Session `id`'s ended record, or why there is none to trust. */
  readEnded(id: number, prefix: string): { ended: EndedRecord } | { why: string } {
    const json = readBounded(this.endedPath(id), 'ended record');
    return typeof json === 'string' ? parseEnded(json, id, prefix) : json;
  }

  /** The ended record goes (answered, or past its time), and any temporary one of it. */
  removeEnded(id: number): void {
    for (const name of this.#names()) if (name.startsWith(`${id}${ENDED}`)) this.#remove(name);
  }

  /** Session ids with an ended record (or a temporary one of it). */
  endedIds(): number[] {
    return this.#idsOf((name) => ENDED_NAME.test(name));
  }

  /** The session is over: its socket, its record and any temporary one go (nothing there is no error);
   * its ended record, if root keeps one, stays (removeEnded). */
  remove(id: number): void {
    for (const name of this.#names()) if (name.startsWith(`${id}.`) && !ENDED_NAME.test(name)) this.#remove(name);
  }

  /** One file goes; one that cannot (a directory: root's own processes without capabilities may write
   * here, docs/security.md) is reported and left, never thrown. */
  #remove(name: string): void {
    try {
      rmSync(join(this.dir, name), { force: true });
    } catch (error) {
      this.#removeFailed(name, (error as Error).message);
    }
  }

  #names(): string[] {
    try {
      return readdirSync(this.dir);
    } catch {
      return [];
    }
  }

  /** Session ids with a file here (socket, record or a temporary one), for removing those no unit has;
   * ended records are not counted (endedIds). */
  ids(): number[] {
    return this.#idsOf((name) => !ENDED_NAME.test(name));
  }

  #idsOf(which: (name: string) => boolean): number[] {
    const ids = new Set<number>();
    for (const name of this.#names()) {
      const match = /^(\d{1,16})\./.exec(name);
      if (match && which(name)) ids.add(Number(match[1]));
    }
    return [...ids];
  }
}

/** `value` as JSON, written to a temporary file, then renamed over `path`: a reader sees the old file or the new. */
function writeWhole(path: string, value: unknown): void {
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w', 0o600);
  try {
    writeSync(fd, JSON.stringify(value));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temporary, path);
  } catch (error) {
    // A full /run: the temporary file goes, and so does the old file, which no longer says what root
    // knows (a stale detach time would end or lengthen the session at its adoption). Neither removal
    // may hide the write's own error (a directory planted at `path` refuses both the rename and this).
    try {
      closeSync(fd);
    } catch {}
    for (const stale of [temporary, path]) {
      try {
        rmSync(stale, { force: true });
      } catch {}
    }
    throw error;
  }
}

/** Opened without following a symlink, and without waiting for a writer should it be a FIFO (Node adds
 * O_CLOEXEC to every open: libuv's uv__fs_open). */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * The file's text, or why there is none. Only a regular file of root's, no larger than we write, is read,
 * and never more than that: what root's own processes without capabilities could plant here (a FIFO, whose
 * open or read would block the broker for good; a symlink to one, or to /dev/zero, read until memory runs
 * out; a directory) is refused by what its descriptor is, not by its path, which could change meanwhile.
 */
function readBounded(path: string, what: string): string | { why: string } {
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { why: `it has no ${what}` };
    if (code === 'ELOOP') return { why: `its ${what} is a symlink` };
    return { why: `its ${what} cannot be read (${(error as Error).message})` };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { why: `its ${what} is not a regular file` };
    if (stat.uid !== 0) return { why: `its ${what} is not root's (uid ${stat.uid})` };
    if (stat.size > MAX_RECORD_BYTES) return { why: `its ${what} is ${stat.size} bytes, over ${MAX_RECORD_BYTES}` };
    // The size was read before the bytes: a file grown since is caught by the one byte past the limit.
    const buffer = Buffer.alloc(MAX_RECORD_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const got = readSync(fd, buffer, length, buffer.length - length, null);
      if (got === 0) break;
      length += got;
    }
    if (length > MAX_RECORD_BYTES) return { why: `its ${what} is over ${MAX_RECORD_BYTES} bytes` };
    return buffer.toString('utf8', 0, length);
  } catch (error) {
    return { why: `its ${what} cannot be read (${(error as Error).message})` };
  } finally {
    closeSync(fd);
  }
}
