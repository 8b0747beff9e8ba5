// The build manifest (written by build.mjs) as types, and the pure comparison verify reports from.
import { createRequire } from 'node:module';

// node:crypto is loaded on first use: only install, verify and status hash, and loading it cost every
// `opencode-ptyctl run` 5–20 ms at start (measured); a static import is evaluated with the CLI's bundle.
const load = createRequire(import.meta.url);

export interface Artifact {
  sha256: string;
  /** Octal permission bits, e.g. "0755". */
  mode: string;
}

export interface BuildManifest {
  name: string;
  version: string;
  /** The Node versions the bundle supports, e.g. ">=20". */
  node: string;
  /** sha256 over the source tree the build read. */
  sources: string;
  artifacts: Record<string, Artifact>;
}

export function parseManifest(text: string): BuildManifest {
  const value = JSON.parse(text) as Partial<BuildManifest>;
  if (typeof value?.version !== 'string' || typeof value.node !== 'string' || typeof value.sources !== 'string' || typeof value.artifacts !== 'object' || !value.artifacts) {
    throw new Error('not a build manifest (version, node, sources, artifacts)');
  }
  return value as BuildManifest;
}

/**
 * Why the manifest's artifacts may not be copied into a root-owned directory, empty when they may.
 * install trusts the manifest for where each file goes and its mode: a path that leaves the package
 * (`..`, absolute) would write elsewhere as root, and a setuid, setgid or world-writable mode would
 * hand root (or anyone) something to run or change. Symlinks are refused when copying (O_NOFOLLOW).
 */
export function artifactProblems(manifest: BuildManifest): string[] {
  const problems: string[] = [];
  for (const [path, artifact] of Object.entries(manifest.artifacts)) {
    const parts = path.split('/');
    if (path === '' || path.startsWith('/') || parts.some((part) => part === '..' || part === '.' || part === '') || path.includes('\0')) {
      problems.push(`manifest artifact ${JSON.stringify(path)}: not a plain relative path inside the package`);
    }
    const mode = /^[0-7]{3,4}$/.test(artifact?.mode ?? '') ? parseInt(artifact.mode, 8) : undefined;
    if (mode === undefined) problems.push(`manifest artifact ${JSON.stringify(path)}: mode ${JSON.stringify(artifact?.mode)} is not octal`);
    else if (mode & 0o6000) problems.push(`manifest artifact ${JSON.stringify(path)}: mode ${artifact.mode} has setuid or setgid`);
    else if (mode & 0o002) problems.push(`manifest artifact ${JSON.stringify(path)}: mode ${artifact.mode} is writable by others`);
    if (!/^[0-9a-f]{64}$/.test(artifact?.sha256 ?? '')) problems.push(`manifest artifact ${JSON.stringify(path)}: no sha256`);
  }
  return problems;
}

export function sha256(data: string | Buffer): string {
  return (load('node:crypto') as typeof import('node:crypto')).createHash('sha256').update(data).digest('hex');
}

/** A bundle's directory name: its version and the manifest's own hash, so two builds never share one. */
export function versionName(manifestText: string, manifest: BuildManifest): string {
  return `${manifest.version}-${sha256(manifestText).slice(0, 12)}`;
}

export interface FileFacts {
  sha256: string;
  /** Permission bits. */
  mode: number;
  uid: number;
  gid: number;
}

/** What differs between one expected file and what is on disk (empty when it matches). */
export function fileDifferences(path: string, expected: { sha256: string; mode?: number }, actual: FileFacts | undefined): string[] {
  if (!actual) return [`${path}: missing`];
  const found: string[] = [];
  if (actual.sha256 !== expected.sha256) found.push(`${path}: content differs (sha256 ${actual.sha256}, expected ${expected.sha256})`);
  if (expected.mode !== undefined && actual.mode !== expected.mode) {
    found.push(`${path}: mode ${actual.mode.toString(8).padStart(4, '0')}, expected ${expected.mode.toString(8).padStart(4, '0')}`);
  }
  if (actual.uid !== 0 || actual.gid !== 0) found.push(`${path}: owned by ${actual.uid}:${actual.gid}, expected root:root`);
  if (actual.mode & 0o022) found.push(`${path}: writable by group or others`);
  return found;
}
