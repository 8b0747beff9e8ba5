// One bundle for code that runs inside a sandbox (a driver, a probe): an ESM file for Node 20 that
// Bun runs too, with `require` made for the bundled CommonJS packages (FACTS.md: ESM output needs it).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { build } from 'esbuild';

export async function bundleForNode(entryPoint: string, outfile: string): Promise<void> {
  mkdirSync(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [entryPoint],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'warning',
  });
}
