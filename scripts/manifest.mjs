// The build manifest: sha256 of the source tree and of every shipped artifact, and the Node range the
// bundle supports. Nothing in it depends on where or when the build ran, so two builds of one commit
// from different directories write identical manifests (test/scripts/manifest.integration.ts).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What the build reads: the tree whose hash names a build. */
export const SOURCE_ROOTS = ['src', 'native', 'units', 'build.mjs', 'binding.gyp', 'package.json', 'package-lock.json', 'scripts/manifest.mjs', 'scripts/helper-wire.ts'];

export function sha256(data) {
  return createHash('sha256').update(data).digest('hex');
}

function walk(root, path) {
  const full = join(root, path);
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full)
    .sort()
    .flatMap((name) => walk(root, join(path, name)));
}

/** Files as `path → sha256`, sorted by path, and one hash over the lot ("path\0hash\n" each). */
export function hashTree(root, paths) {
  const files = {};
  for (const path of paths.flatMap((p) => walk(root, p)).sort()) files[path] = sha256(readFileSync(join(root, path)));
  const tree = sha256(Object.entries(files).map(([path, hash]) => `${path}\0${hash}\n`).join(''));
  return { sha256: tree, files };
}

/** The manifest of a built dist/ directory: every file in it except the manifest itself. */
export function buildManifest(root, out) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const artifacts = {};
  for (const path of walk(out, '.').map((p) => relative('.', p)).sort()) {
    if (path === 'manifest.json') continue;
    const full = join(out, path);
    artifacts[path] = { sha256: sha256(readFileSync(full)), mode: (statSync(full).mode & 0o7777).toString(8).padStart(4, '0') };
  }
  const sources = hashTree(root, SOURCE_ROOTS);
  return { name: pkg.name, version: pkg.version, node: pkg.engines.node, sources: sources.sha256, artifacts, sourceFiles: sources.files };
}
