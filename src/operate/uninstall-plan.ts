// Uninstall as a pure plan: stop what runs, then remove exactly what the install record lists.
import type { Existing, Plan, PlannedStep, Step } from './install-plan.ts';
import { BROKER_UNIT, SOCKET_UNIT, paths, recordedSlices, type InstallRecord, type Layout } from './layout.ts';
import { slicesToStop } from './slices.ts';
import { KEPT_DIR } from '../kept-store/index.ts';

export interface UninstallOptions {
  layout: Layout;
  /** Also remove the config (kept by default: it is the operator's). */
  purge: boolean;
}

export function planUninstall(options: UninstallOptions, record: InstallRecord | undefined, existing: Existing, euid: number): Plan {
  const { layout } = options;
  if (euid !== 0) return { refusals: ['must run as root'], steps: [], notes: [] };
  if (!record) {
    // A plain uninstall kept the operator's config (and its README); --purge afterwards removes those.
    const left = [paths.config(layout), paths.configReadme(layout)].filter((path) => existing.file(path) !== undefined);
    if (!options.purge || left.length === 0) return { refusals: [`nothing to uninstall: no install record at ${paths.record(layout)}`], steps: [], notes: [] };
    const steps: PlannedStep[] = left.map((path) => ({ step: { op: 'remove', path, recursive: false }, change: true }));
    // Removed only when empty by then (apply checks): files the operator added there stay.
    steps.push({ step: { op: 'remove', path: layout.configDir, recursive: false }, change: existing.isDir(layout.configDir) });
    return { refusals: [], steps, notes: ['not installed: removed the config a plain uninstall kept'] };
  }
  const steps: PlannedStep[] = [];
  const add = (step: Step, change = true) => steps.push({ step, change });
  const notes: string[] = [];

  // No new connections first; then the sessions (each told by its end), then the broker.
  add({ op: 'systemctl', args: ['stop', SOCKET_UNIT] }, existing.socketActive);
  // An idle warm unit too: its helper ends when its worker does, but nothing is left to chance.
  const sessions = [...existing.liveSessions, ...(existing.warmUnits ?? [])];
  add({ op: 'wait-sessions', units: sessions }, sessions.length > 0);
  add({ op: 'systemctl', args: ['stop', BROKER_UNIT] }, existing.brokerActive);
  // Kept sessions' sockets and records: their units are stopped above, and the broker's unit keeps this
  // directory across its stops (RuntimeDirectoryPreserve=yes), so nothing else would remove it before a reboot.
  add({ op: 'remove', path: KEPT_DIR, recursive: true }, existing.isDir(KEPT_DIR));
  add({ op: 'systemctl', args: ['disable', SOCKET_UNIT] }, existing.socketEnabled);
  // Slices stay active until stopped, and a stop ends every unit inside: only the recorded ones that hold
  // nothing install did not create (an operator's agent may run in an old install's opencode.slice).
  const slices = slicesToStop(recordedSlices(record), existing.sliceState ?? (() => ({ active: true, members: [] })), record.unitPrefix);
  if (slices.stop.length) add({ op: 'systemctl', args: ['stop', ...slices.stop] });
  for (const { slice, foreign } of slices.kept) notes.push(`left ${slice} running: it holds ${foreign.join(', ')}, which install did not create`);

  const keep = new Set(options.purge ? [] : [paths.configReadme(layout)]);
  for (const path of Object.keys(record.files)) if (!keep.has(path)) add({ op: 'remove', path, recursive: false }, existing.file(path) !== undefined);
  for (const version of record.versions) {
    const dir = paths.version(layout, version);
    add({ op: 'remove', path: dir, recursive: true }, existing.isDir(dir));
  }
  add({ op: 'remove', path: paths.current(layout), recursive: false }, existing.link(paths.current(layout)) !== undefined);
  add({ op: 'remove', path: paths.record(layout), recursive: false });
  if (options.purge) add({ op: 'remove', path: paths.config(layout), recursive: false }, existing.file(paths.config(layout)) !== undefined);
  else if (existing.file(paths.config(layout))) notes.push(`kept ${paths.config(layout)} (--purge removes it)`);
  // Directories last, deepest first, each only if install created it and it is empty by then (apply checks).
  for (const dir of [...record.dirs].sort((a, b) => b.length - a.length)) {
    if (dir === layout.configDir && !options.purge) continue;
    add({ op: 'remove', path: dir, recursive: false }, existing.isDir(dir));
  }
  if (record.createdGroup) add({ op: 'groupdel', name: record.createdGroup });
  add({ op: 'systemctl', args: ['daemon-reload'] });
  notes.push(`restart ${record.clientUnit} to drop its supplementary group ${record.socketGroup}`);
  return { refusals: [], steps, notes };
}
