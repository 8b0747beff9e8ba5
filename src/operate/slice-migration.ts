// An install's config.json keeps `session.slice` across upgrades: the old default name (which nests in
// opencode.slice by its dashes, systemd.slice(5)) is rewritten to the new one, since install no longer
// writes a unit for it and sessions would land in an implicit slice with no limits; a name of the
// operator's own is left alone, with a note.
import { OLD_SESSIONS_SLICE, SESSIONS_SLICE } from './layout.ts';

export interface ConfigMigration {
  /** The config to write, when it changes. */
  content?: string;
  note?: string;
}

export function migrateSessionSlice(text: string | undefined, path: string): ConfigMigration {
  let config: unknown;
  try {
    config = JSON.parse(text ?? '');
  } catch {
    return {}; // verify names an unreadable config; install leaves the operator's file as it is
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return {};
  const session = (config as { session?: unknown }).session;
  if (typeof session !== 'object' || session === null || Array.isArray(session)) return {};
  const slice = (session as { slice?: unknown }).slice;
  if (slice === OLD_SESSIONS_SLICE) {
    const migrated = { ...config, session: { ...session, slice: SESSIONS_SLICE } };
    return {
      content: `${JSON.stringify(migrated, null, 2)}\n`,
      note: `${path}: session.slice ${OLD_SESSIONS_SLICE} (the old default, inside opencode.slice by its dashes) is now ${SESSIONS_SLICE}, the slice install writes limits for`,
    };
  }
  if (typeof slice === 'string' && slice !== SESSIONS_SLICE) {
    return { note: `${path} names its own session.slice ${slice}: kept; the limits install writes are in ${SESSIONS_SLICE}, not there` };
  }
  return {};
}
