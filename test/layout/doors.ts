// Finds imports that enter a folder of src/ through an inner file instead of its door (index.ts).
// A module in src/X/ may import any file of src/X/; from outside src/X/ only src/X/index.ts (or the
// door of a folder nested in it, such as src/client/node-pty/index.ts, a published entry of its own).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface SourceFile {
  /** Path relative to the repository root, with forward slashes (e.g. `src/broker/main.ts`). */
  path: string;
  text: string;
}

export interface DeepImport {
  from: string;
  /** The file imported, relative to the repository root. */
  target: string;
  /** The door it should have gone through. */
  door: string;
  line: number;
}

// Static imports and re-exports (also spread over several lines), side-effect imports, dynamic import().
const SPECIFIERS = [
  /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm,
  /^\s*import\s*['"]([^'"]+)['"]/gm,
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** Relative specifiers of one file, with their line numbers. */
export function importsOf(text: string): { specifier: string; line: number }[] {
  const found: { specifier: string; line: number; at: number }[] = [];
  for (const pattern of SPECIFIERS) {
    for (const match of text.matchAll(pattern)) {
      const specifier = match[1]!;
      if (!specifier.startsWith('.')) continue;
      const at = match.index! + match[0].lastIndexOf(specifier);
      found.push({ specifier, at, line: text.slice(0, at).split('\n').length });
    }
  }
  return found.sort((a, b) => a.at - b.at).map(({ specifier, line }) => ({ specifier, line }));
}

/** The door an import from `from` to `target` must use, or undefined when the import is fine as it is. */
export function doorFor(from: string, target: string): string | undefined {
  if (!target.startsWith('src/')) return undefined;
  const folders = posix.dirname(target).split('/');
  // The outermost folder of src/ that holds the target but not the importer is the one entered.
  for (let depth = 2; depth <= folders.length; depth += 1) {
    const folder = folders.slice(0, depth).join('/');
    if (from.startsWith(`${folder}/`)) continue;
    if (posix.basename(target) === 'index.ts') return undefined;
    return `${folder}/index.ts`;
  }
  return undefined;
}

/** Every import among `files` that enters a folder of src/ other than through its door. */
export function deepImports(files: SourceFile[]): DeepImport[] {
  const offences: DeepImport[] = [];
  for (const file of files) {
    // Tests may reach into a folder: they test its inner modules.
    if (!file.path.startsWith('src/') && !file.path.startsWith('bench/')) continue;
    for (const { specifier, line } of importsOf(file.text)) {
      const target = posix.normalize(posix.join(posix.dirname(file.path), specifier));
      const door = doorFor(file.path, target);
      if (door) offences.push({ from: file.path, target, door, line });
    }
  }
  return offences;
}

/** The TypeScript sources below `dirs` of the repository at `root`. */
export function readSources(root: string, dirs: string[]): SourceFile[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? walk(path) : /\.ts$/.test(name) ? [path] : [];
      });
  return dirs.flatMap((dir) => walk(join(root, dir))).map((path) => ({
    path: relative(root, path).split(sep).join('/'),
    text: readFileSync(path, 'utf8'),
  }));
}

export const repositoryRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
