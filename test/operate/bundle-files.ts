// The built dist/ as files to copy into a sandbox (its /work is not there), as a checkout's build lies.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export function bundleFiles(to: string): { from: string; to: string; mode: number }[] {
  const files: { from: string; to: string; mode: number }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(`${root}dist/${dir}`, { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else files.push({ from: `${root}dist/${rel}`, to: `${to}/${rel}`, mode: rel.endsWith('opencode-pty-session') ? 0o711 : 0o644 });
    }
  };
  walk('');
  return files;
}
